#!/usr/bin/env bash
# What to run on the GPU machine for branch fid5 (issue 12), one device call of ~3 minutes:
# the fid configurations whose 6 measured steps (run C, 2026-12-01) cannot say what their
# step time is, each run twice with 4 warm-up + 20 measured steps, then replayed through
# the simulator. Binaries come built from the development machine in build/ (plain `make`).
#   - gpt2-large overlap 0.5, micro-batch 1, 16 threads (run C: 122.2 ms by the step-time
#     rule, 106.6 by its GPU step boundaries: one backward of 101 ms among ones of 30-47,
#     the CPU Adam pool holding every core)
#   - gpt2-large dpu 1 and 0.5 on 16 threads (the GPU's starvation under all-core Adam)
#   - gpt2-large dpu 1 on 4 and 8 threads, gpt2-medium dpu 1 on 4 threads at 25 GB/s
#     (Adam alone 4-10 % slower than the fitted thread curve in run C)
# $OUT gets visit-fid5.log (every summary), fid5.db, and one run-*.json per run.
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
Z=build/zbench
LOG=$OUT/visit-fid5.log
DB=$OUT/fid5.db
HW=hw/h200-machine-executor.json
T0=$(date +%s)
step() { echo "=== $* ($(date +%T), +$(($(date +%s) - T0)) s)" | tee -a "$LOG"; }
rm -f "$DB"
step "$($Z --version 2>&1 | head -1); $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); $(nproc) CPUs"
CONFIGS=(
	"--model gpt2-large --policy overlap --ratio 0.5 --threads 16 --micro-batch 1"
	"--model gpt2-large --policy dpu --ratio 1 --threads 16 --micro-batch 4"
	"--model gpt2-large --policy dpu --ratio 0.5 --threads 16 --micro-batch 4"
	"--model gpt2-large --policy dpu --ratio 1 --threads 8 --micro-batch 4"
	"--model gpt2-large --policy dpu --ratio 1 --threads 4 --micro-batch 4"
	"--model gpt2-medium --policy dpu --ratio 1 --threads 4 --micro-batch 8 --link-rate 25"
)
n=0
for rep in 1 2; do
	for c in "${CONFIGS[@]}"; do
		n=$((n + 1))
		if [ $(($(date +%s) - T0)) -gt "${ZB_BUDGET:-360}" ]; then
			step "run $n: skipped (budget)"
			continue
		fi
		step "run $n: $c"
		# shellcheck disable=SC2086 # the options are words on purpose
		timeout -k 5 120 $Z run $c --seq 1024 --warmup 4 --steps 20 --hw "$HW" --db "$DB" --json \
			>"$OUT/run-$n.json" 2>>"$LOG"
		echo "run $n exit $?" | tee -a "$LOG"
	done
done
RDB=/tmp/zbench-fid5-replay.db # a copy, so that no reader's -shm/-wal files land in $OUT
rm -f "$RDB" "$RDB-wal" "$RDB-shm"
for f in "$DB" "$DB-wal"; do [ -f "$f" ] && cp "$f" "$RDB${f#$DB}"; done
step "replay: calibrate --from-db --all-runs --warmup 4 --eval h200-machine --busy"
timeout -k 5 60 $Z calibrate --from-db "$RDB" --all-runs --warmup 4 --eval h200-machine --busy >>"$LOG" 2>&1
step "replay: calibrate --from-db --all-runs --warmup 4 --eval $HW"
timeout -k 5 60 $Z calibrate --from-db "$RDB" --all-runs --warmup 4 --eval "$HW" >>"$LOG" 2>&1
step "done"
ls -la "$OUT" | tee -a "$LOG"
