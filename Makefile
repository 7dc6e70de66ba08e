# zbench - one top-level Makefile.
#
#   make            build build/zbench (with CUDA parts when nvcc is found)
#   make test       unit tests (no GPU needed; GPU tests print "skipped: no GPU")
#   make test-gpu   GPU tests, on a machine with a GPU
#   make bench      benchmarks that need no GPU (engine speed, sweep time)
#   make V=1        show the commands
#   make SAN=1 test the tests under AddressSanitizer + UBSan (build-san/, no CUDA:
#                   the simulator, parsers and database are what hostile input reaches)
#   make fuzz       libFuzzer harnesses (fuzz/, clang) each for FUZZ_SECONDS (default 60)
#   make check-layers   no include from a lower layer to a higher one (LAYERS below)
#   make architecture   docs/ARCHITECTURE.md from docs/ARCHITECTURE.in.md and the headers
#
# Source conventions, so new files need no Makefile edits:
#   <module>/*.c          host C11, always built
#   <module>/*_cuda.c     host C using the CUDA runtime API: only with nvcc
#   <module>/*_nocuda.c   the "built without CUDA" side of the same API: only without
#   <module>/*.cu         kernels and CUDA glue: only with nvcc
#   <module>/*_shim.c     build/zbench's forwarders to the GPU library: only with nvcc,
#                         only in build/zbench (exec/gpu_entry.h)
#
# With nvcc, every *_cuda.c and *.cu object goes into build/lib/libzbench_gpu.so,
# which build/zbench loads (dlopen) only for a command that needs the GPU: zbench
# itself links no CUDA library. Test programs link those objects directly.
#   tests/test_*.c        one cmocka test program each
#   tests/gpu/test_*.c    GPU test programs (built with nvcc only)

CC      ?= cc
NVCC    := $(shell which nvcc 2>/dev/null)
BUILD   := build
ifeq ($(SAN),1)
NVCC    :=
BUILD   := build-san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
endif
ifeq ($(FUZZ),1)
NVCC    :=
BUILD   := build-fuzz
CC      := clang
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
endif
FUZZ_SECONDS ?= 60
CUDA    ?= $(if $(NVCC),$(patsubst %/bin/nvcc,%,$(realpath $(NVCC))),)
VERSION := 0.1.0
GIT_COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null)

ifeq ($(V),1)
Q :=
else
Q := @
endif

CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -I. -pthread \
           -DZB_VERSION='"$(VERSION)"' $(SANFLAGS)
LDLIBS  := -Wl,-Bstatic -ljansson -lz -Wl,-Bdynamic -lsqlite3 -lm -pthread
HOST_LDLIBS := $(LDLIBS)
# The layers, lowest first: a file includes its own folder and lower ones only
# (scripts/check-layers.sh, `make check-layers`). inject/ is built on its own (below).
LAYERS  := common core inputs config schedules sim profiler inject exec results analysis bench peers report validate plots publish cli
MODULES := $(filter-out inject,$(LAYERS))
ifeq ($(FUZZ),1)
MODULES := common core inputs config schedules sim profiler results analysis peers report plots cli # what the harnesses reach (options, parsers, model, database, plots, traces); no executor
endif

ALL_C   := $(foreach m,$(MODULES),$(wildcard $(m)/*.c))
CUDA_C  := $(filter %_cuda.c,$(ALL_C))
NOCUDA_C:= $(filter %_nocuda.c,$(ALL_C))
SHIM_C  := $(filter %_shim.c,$(ALL_C))
PLAIN_C := $(filter-out $(CUDA_C) $(NOCUDA_C) $(SHIM_C) cli/main.c,$(ALL_C))
CU_SRC  := $(foreach m,$(MODULES),$(wildcard $(m)/*.cu))

ifneq ($(NVCC),)
CUDA_INC  := -I$(CUDA)/include
CUDA_LIBDIRS := $(CUDA)/lib64 $(CUDA)/lib $(CUDA)/extras/CUPTI/lib64
CFLAGS    += -DZB_HAVE_CUDA=1 $(CUDA_INC)
NVCCFLAGS := -O3 -std=c++17 -I. -DZB_HAVE_CUDA=1 --compiler-options -Wall \
             -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80 \
             -gencode arch=compute_90,code=compute_90
CUDA_LDLIBS := $(foreach d,$(CUDA_LIBDIRS),-L$(d) -Wl,-rpath,$(d)) \
             -lcublasLt -lcublas -lcupti -lcudart -lstdc++ -ldl
LDLIBS    += $(CUDA_LDLIBS)
# position-independent (build/gpu/): the same objects go into the shared GPU library
GPU_OBJ   := $(patsubst %.c,$(BUILD)/gpu/%.o,$(CUDA_C)) $(patsubst %.cu,$(BUILD)/gpu/%.cu.o,$(CU_SRC))
GPU_SO    := $(BUILD)/lib/libzbench_gpu.so
HOST_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(PLAIN_C) $(SHIM_C)) $(BUILD)/gen/h200_executor_json.o
else
NOCUDA_OBJ:= $(patsubst %.c,$(BUILD)/%.o,$(NOCUDA_C))
GPU_OBJ   :=
GPU_SO    :=
endif

# The h200 preset's executor profile is hw/h200-machine-executor.json's (inputs/execprofile.c):
# the file becomes a C string at build time, so the preset and the file cannot differ.
GEN_C    := $(BUILD)/gen/h200_executor_json.c
GEN_OBJ  := $(BUILD)/gen/h200_executor_json.o
LIB_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(PLAIN_C)) $(GPU_OBJ) $(NOCUDA_OBJ) $(GEN_OBJ)
LIB      := $(BUILD)/libzbench.a
ZBENCH   := $(BUILD)/zbench
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
GPU_TEST_SRC := $(wildcard tests/gpu/test_*.c)
ifneq ($(NVCC),)
GPU_TEST_BIN := $(patsubst tests/gpu/%.c,$(BUILD)/tests/gpu/%,$(GPU_TEST_SRC))
else
GPU_TEST_BIN :=
endif
CMOCKA_SO := $(shell ls /usr/lib/*/libcmocka.so.0 2>/dev/null | head -n 1)

.PHONY: all test test-gpu bench clean cuda-note fuzz fuzz-build check-layers architecture
all: cuda-note $(ZBENCH)

# The injection library of `zbench trace` (inject/inject.c): the CUPTI collector
# built position-independent, only InitializeInjection exported.
ifneq ($(NVCC),)
INJECT     := $(BUILD)/libzbench_inject.so
INJECT_SRC := inject/inject.c inject/nvtx_steps.c profiler/trace.c profiler/cupti_cuda.c profiler/spool.c common/error.c common/text.c common/outfile.c
INJECT_OBJ := $(patsubst %.c,$(BUILD)/pic/%.o,$(INJECT_SRC))

$(BUILD)/pic/%.o: %.c $(wildcard */*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC-PIC  $<")
	$(Q)$(CC) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(INJECT): $(INJECT_OBJ)
	@$(if $(Q),echo "  LD-SO   $@")
	$(Q)$(CC) -shared -o $@ $^ $(foreach d,$(CUDA_LIBDIRS),-L$(d) -Wl,-rpath,$(d)) \
		-lcupti -lcudart -lstdc++ -ldl -pthread -Wl,--no-undefined
else
INJECT :=
endif
all: $(INJECT)

cuda-note:
ifeq ($(NVCC),)
	@echo "note: nvcc not found: building the simulator-only zbench (GPU commands say 'built without CUDA')"
endif

$(BUILD)/%.o: %.c $(wildcard */*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# The commit lives in one object, rebuilt when HEAD moves (common/version.h): the stamp
# is rewritten only when the commit differs, so an unchanged HEAD rebuilds nothing.
GIT_STAMP := $(BUILD)/git-commit
$(shell mkdir -p $(BUILD) && { [ "$$(cat $(GIT_STAMP) 2>/dev/null)" = "$(GIT_COMMIT)" ] || echo "$(GIT_COMMIT)" > $(GIT_STAMP); })
$(BUILD)/common/version.o: $(GIT_STAMP)
$(BUILD)/common/version.o: CFLAGS += -DZB_GIT_COMMIT_STR='"$(GIT_COMMIT)"'

$(BUILD)/gpu/%.o: %.c $(wildcard */*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC-GPU  $<")
	$(Q)$(CC) $(CFLAGS) -fPIC -c $< -o $@

$(BUILD)/gpu/%.cu.o: %.cu $(wildcard */*.h) $(wildcard */*.cuh)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) $(NVCCFLAGS) -Xcompiler -fPIC -c $< -o $@

$(GEN_C): hw/h200-machine-executor.json
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  GEN     $@")
	$(Q){ echo '/* generated from $< by the Makefile: do not edit */'; \
	  echo 'const char zb_h200_executor_json[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@.tmp && mv $@.tmp $@

$(GEN_OBJ): $(GEN_C)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

ifneq ($(NVCC),)
# zbench: every host object (not the archive: the GPU library calls host functions
# no command of zbench may reference), exported to the library (--export-dynamic),
# and the forwarders of the *_shim.c files (exec/, bench/); no CUDA library.
$(ZBENCH): $(BUILD)/cli/main.o $(HOST_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -Wl,--export-dynamic $(HOST_LDLIBS) -ldl

# Undefined host symbols resolve against zbench when it loads the library.
$(GPU_SO): $(GPU_OBJ) exec/gpu_entry.map
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD-SO   $@")
	$(Q)$(CC) -shared -o $@ $(GPU_OBJ) -Wl,--version-script=exec/gpu_entry.map -Wl,-rpath,'$$ORIGIN' \
		$(CUDA_LDLIBS) -lm -pthread
else
$(ZBENCH): $(BUILD)/cli/main.o $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS)
endif
all: $(GPU_SO)

# Test programs carry libcmocka beside them (build/lib) so they also run on the
# GPU machine, which has no cmocka package.
$(BUILD)/lib/libcmocka.so.0:
	@mkdir -p $(dir $@)
	$(Q)cp $(CMOCKA_SO) $@

$(BUILD)/tests/%: tests/%.c tests/harness.h tests/kfit_fixture.h $(LIB) $(BUILD)/lib/libcmocka.so.0
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST-CC $<")
	$(Q)$(CC) $(CFLAGS) $< -o $@ $(LIB) -L$(BUILD)/lib -l:libcmocka.so.0 \
		-Wl,-rpath,'$$ORIGIN/../lib' -Wl,-rpath,'$$ORIGIN/../../lib' $(LDLIBS)

ifeq ($(SAN),1)
# Every sanitizer report (also from zbench processes the tests start, whose exit
# code a test may not look at) lands in san-reports/; any report fails the run.
SAN_DIR := $(abspath $(BUILD))/san-reports
SAN_ENV := ASAN_OPTIONS=log_path=$(SAN_DIR)/asan:detect_leaks=1 \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(SAN_DIR)/ubsan
endif

test: $(ZBENCH) $(GPU_SO) $(INJECT) $(TEST_BIN) $(GPU_TEST_BIN)
ifeq ($(SAN),1)
	$(Q)rm -rf $(SAN_DIR) && mkdir -p $(SAN_DIR) && chmod 1777 $(SAN_DIR)
	$(Q)rc=0; ZBENCH=$(ZBENCH) ZB_SAN=1 $(SAN_ENV) tests/run.sh $(TEST_BIN) || rc=1; \
	n=$$(ls $(SAN_DIR) | wc -l); \
	if [ $$n -gt 0 ]; then head -n 40 $(SAN_DIR)/*; echo "sanitizers: $$n reports ($(SAN_DIR))"; rc=1; \
	else echo "sanitizers: 0 reports"; fi; exit $$rc
else
	$(Q)ZBENCH=$(ZBENCH) tests/run.sh $(TEST_BIN) $(GPU_TEST_BIN) $(if $(NVCC),,tests/gpu)
endif

test-gpu: $(ZBENCH) $(GPU_SO) $(INJECT) $(GPU_TEST_BIN)
ifeq ($(NVCC),)
	@echo "test-gpu: built without CUDA (nvcc not found)"; exit 2
else
	$(Q)ZBENCH=$(ZBENCH) ZB_REQUIRE_GPU=1 tests/run.sh $(GPU_TEST_BIN)
endif

bench: $(ZBENCH)
	$(Q)$(ZBENCH) bench --filter sim

# libFuzzer harnesses (fuzz/fuzz_*.c), built with clang into build-fuzz/; `make fuzz`
# builds them and runs each for FUZZ_SECONDS (scripts/fuzz.sh: corpus, limits, summary).
FUZZ_BIN := $(patsubst fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard fuzz/fuzz_*.c))

$(BUILD)/fuzz/%: fuzz/%.c $(wildcard fuzz/*.h) tests/plot_script.h $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZ-CC $<")
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer $< -o $@ $(LIB) $(LDLIBS)

fuzz-build: $(FUZZ_BIN)

fuzz:
	$(Q)$(MAKE) --no-print-directory FUZZ=1 fuzz-build
	$(Q)scripts/fuzz.sh $(FUZZ_SECONDS)

# The tree's own checks (no build needed): the layer order, and docs/ARCHITECTURE.md
# made from the headers (CI runs scripts/architecture.sh --check).
check-layers:
	$(Q)scripts/check-layers.sh

architecture:
	$(Q)scripts/architecture.sh > docs/ARCHITECTURE.md.tmp && mv docs/ARCHITECTURE.md.tmp docs/ARCHITECTURE.md

clean:
	rm -rf $(BUILD) build-san build-fuzz
