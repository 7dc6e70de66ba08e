#!/usr/bin/env bash
# GPU visit for the sweep branch (issue 15: build/zbench without CUDA libraries, the
# CUDA side in build/lib/libzbench_gpu.so loaded on first use). About 3 minutes on the
# H200 machine. Needs build/ from the development machine (carried: build/zbench,
# build/libzbench_inject.so, build/tests, build/lib; the GPU library is
# build/lib/libzbench_gpu.so). Every GPU entry point of the table (exec/gpu_entry.h)
# is called once through build/zbench. Writes under $OUT:
#   sweep.log        everything, with rc= after each step and a summary at the end
#   loaded.txt       LD_DEBUG=files of `zbench predict` (must name no CUDA library) and
#                    of `zbench run` (must name libzbench_gpu.so and libcudart)
#   run.json         zbench run --json --trace, gpt2, 3 steps (zb_execute, zb_trace_start/stop)
#   bench-gpu.txt    zbench bench --filter gpu-adam --quick (the bench case forwarders)
#   calibrate.txt    zbench calibrate --quick --no-db (zb_calibrate_gpu)
#   tests-gpu.log    the GPU test programs (they link the CUDA objects directly)
#   zbench.db        the runs, stored
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
Z=build/zbench
DB=$OUT/zbench.db
LOG=$OUT/sweep.log
step() { echo "=== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$LOG"
ls -la build/zbench build/lib/ | tee -a "$LOG"

step "which libraries predict and run load"
LD_DEBUG=files $Z predict --model gpt2 --steps 3 --db "$DB" >/dev/null 2>"$OUT/ld-predict.txt"
echo "rc=$?" | tee -a "$LOG"
LD_DEBUG=files timeout 120 $Z run --model gpt2 --steps 2 --db "$DB" --quiet >/dev/null 2>"$OUT/ld-run.txt"
echo "rc=$?" | tee -a "$LOG"
{
	echo "predict: $(grep -c 'file=' "$OUT/ld-predict.txt") objects; CUDA ones:"
	grep -oE 'file=[^ ]*(cudart|cublas|cupti|zbench_gpu)[^ ]*' "$OUT/ld-predict.txt" | sort -u
	echo "run: CUDA ones:"
	grep -oE 'file=[^ ]*(cudart|cublas|cupti|zbench_gpu)[^ ]*' "$OUT/ld-run.txt" | sort -u
} >"$OUT/loaded.txt"
cat "$OUT/loaded.txt" | tee -a "$LOG"

step "run --trace --json (execute, trace start/stop through the library)"
timeout 180 $Z run --model gpt2 --steps 3 --trace --json --db "$DB" >"$OUT/run.json" 2>>"$LOG"
echo "rc=$?" | tee -a "$LOG"
head -c 600 "$OUT/run.json" | tee -a "$LOG"; echo | tee -a "$LOG"

step "bench gpu-adam --quick (bench case forwarders)"
timeout 120 $Z bench --filter gpu-adam --quick >"$OUT/bench-gpu.txt" 2>&1
echo "rc=$?" | tee -a "$LOG"
cat "$OUT/bench-gpu.txt" | tee -a "$LOG"

step "calibrate --quick --no-db (zb_calibrate_gpu)"
timeout 240 $Z calibrate --quick --no-db --out "$OUT/calibrated.json" >"$OUT/calibrate.txt" 2>&1
echo "rc=$?" | tee -a "$LOG"
tail -n 15 "$OUT/calibrate.txt" | tee -a "$LOG"

step "missing library: one line, exit 2"
ZBENCH_GPU_LIB=/nonexistent/libzbench_gpu.so $Z run --model gpt2 --steps 2 2>&1 | tee -a "$LOG"
echo "rc=${PIPESTATUS[0]}" | tee -a "$LOG"

step "GPU tests and test_gpu_load"
ZBENCH=$Z ZB_REQUIRE_GPU=1 timeout 400 tests/run.sh build/tests/gpu/test_* build/tests/test_gpu_load >"$OUT/tests-gpu.log" 2>&1
echo "rc=$?" | tee -a "$LOG"
grep -E "^tests:|failing|not ok" "$OUT/tests-gpu.log" | grep -v SKIP | tee -a "$LOG"

step "summary"
grep -E "^===|rc=" "$LOG" | tail -n 20
