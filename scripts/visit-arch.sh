#!/usr/bin/env bash
# visit-arch.sh - the GPU paths issue 9 (the architecture move) touched, each run
# once on the GPU machine: the executor split into steps and files (zb_execute,
# tasks_cuda.c, buffers_cuda.c, check_cuda.c), the kernels split (kernels.cu,
# embed_loss.cu, gpu_adam.cu, kernel_bench.cu), cmd_run, cmd_validate and
# cmd_calibrate split into steps, and the GPU test programs. Binaries come from the
# development machine in build/ (as for gpu-visit.sh). Everything lands in $OUT:
# visit-arch.log (all output), arch.db, test-gpu.log, hw-quick.json.
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
Z=build/zbench
DB=$OUT/arch.db
LOG=$OUT/visit-arch.log
step() { echo "=== $* ($(date +%T))" | tee -a "$LOG"; }
run() { step "$*"; timeout 300 "$@" >>"$LOG" 2>&1; echo "rc=$?" | tee -a "$LOG"; }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$LOG"
step "GPU tests"
ZBENCH=$Z ZB_REQUIRE_GPU=1 timeout 300 tests/run.sh build/tests/gpu/test_* >"$OUT/test-gpu.log" 2>&1
echo "rc=$?" | tee -a "$LOG"
grep -E "not ok|^tests:" "$OUT/test-gpu.log" | tee -a "$LOG"
run $Z run --model gpt2 --check --db "$DB"                                  # precision check (check_cuda.c)
run $Z run --model gpt-2.5b --micro-batch 4 --seq 2048 --policy dpu --ratio 0.25 --trace --db "$DB"
run $Z export latest --db "$DB" -o "$OUT/step.json"
run $Z compare --db "$DB"
run $Z run --model llama2-7b --layers 4 --policy overlap --offload-param --ckpt cpu --db "$DB" # fetches, checkpoints
run $Z validate --suite quick --limit 2 --db "$DB"
run $Z calibrate --quick --out "$OUT/hw-quick.json" --db "$DB"
run $Z bench --filter gpu --quick
