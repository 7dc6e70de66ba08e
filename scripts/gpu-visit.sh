#!/usr/bin/env bash
# One visit to the GPU machine: build check, GPU tests, a traced-free smoke run of
# every policy with the precision check, then benchmarks; logs and the database go
# to $OUT. Binaries are built on the development machine and carried in build/
# (the GPU machine has no sqlite3.h or jansson headers). Usage:
#   scripts/gpu-visit.sh tests     GPU tests + smoke runs
#   scripts/gpu-visit.sh bench     benchmarks (cpu, gpu, e2e)
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:$PWD/build/lib
what=${1:-tests}
nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv | tee "$OUT/gpu.txt"
nproc; lscpu | grep -E "Model name|Flags" | cut -c1-200
if [ "$what" = tests ]; then
	ZBENCH=build/zbench ZB_REQUIRE_GPU=1 tests/run.sh build/tests/gpu/test_* 2>&1 | tee "$OUT/test-gpu.log" | grep -vE "^\[test_kernels\] (ok|# )"
	for p in none offload overlap dpu; do
		build/zbench run --model gpt2 --policy $p --ratio 0.5 --micro-batch 4 --seq 512 --check --quiet \
			--db "$OUT/zbench.db" 2>&1 | tail -12 | tee -a "$OUT/run.log"
	done
fi
if [ "$what" = bench ]; then
	build/zbench bench --filter cpu --json >"$OUT/bench-cpu.json" 2>"$OUT/bench-cpu.txt"; cat "$OUT/bench-cpu.txt"
	build/zbench bench --filter gpu-adam 2>&1 | tee "$OUT/bench-gpu.txt"
	build/zbench bench --filter gemm 2>&1 | tee -a "$OUT/bench-gpu.txt"
	build/zbench bench --filter pcie 2>&1 | tee -a "$OUT/bench-gpu.txt"
	build/zbench bench --filter e2e --json >"$OUT/bench-e2e.json" 2>"$OUT/bench-e2e.txt"; cat "$OUT/bench-e2e.txt"
fi
