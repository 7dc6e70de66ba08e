#!/usr/bin/env bash
# One visit to the GPU machine, everything that needs the GPU in one call (device
# time is short). Binaries are built on the development machine and carried in
# build/ (the GPU machine has no sqlite3.h or jansson headers, so nothing is
# compiled there). Everything lands in $OUT: visit.log (all output), zbench.db,
# hw-h200.json (the calibrated profile), and the JSON of each benchmark.
#   scripts/gpu-visit.sh [tests] [bench] [calibrate] [validate] [regress] [trace]
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
Z=build/zbench
DB=$OUT/zbench.db
LOG=$OUT/visit.log
step() { echo "=== $* ($(date +%T))" | tee -a "$LOG"; }
{
nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv,noheader
echo "cores: $(nproc); $(lscpu | grep 'Model name')"
} | tee -a "$LOG"
for what in "$@"; do
	case $what in
	tests)
		step "GPU tests"
		ZBENCH=$Z ZB_REQUIRE_GPU=1 timeout ${ZB_TESTS_TIMEOUT:-240} tests/run.sh build/tests/gpu/test_* >"$OUT/test-gpu.log" 2>&1
		grep -E "not ok|ERROR|error|master vs|overhead|dropped|^tests:" "$OUT/test-gpu.log" | grep -v "# SKIP" | tee -a "$LOG"
		;;
	bench)
		for c in gpu-adam gemm pcie cpu-adam e2e; do
			step "bench $c"
			timeout 300 $Z bench --filter $c --json >"$OUT/bench-$c.json" 2>>"$LOG"
		done
		;;
	calibrate)
		step "calibrate"
		timeout ${ZB_CALIBRATE_TIMEOUT:-150} $Z calibrate --out "$OUT/hw-h200.json" --db "$DB" >>"$LOG" 2>&1
		echo "rc=$?" | tee -a "$LOG"
		;;
	validate)
		step "validate"
		hw=$OUT/hw-h200.json
		[ -f "$hw" ] || hw=h200-machine
		timeout $((${ZB_VALIDATE_BUDGET:-260} + 40)) $Z validate --hw "$hw" --budget ${ZB_VALIDATE_BUDGET:-260} \
			--db "$DB" >>"$LOG" 2>&1
		echo "rc=$?" | tee -a "$LOG"
		;;
	regress)
		step "regress"
		timeout 60 $Z baseline save h200 --suite quick --repeats 3 --db "$DB" >>"$LOG" 2>&1
		timeout 60 $Z regress --baseline h200 --repeats 3 --db "$DB" >>"$LOG" 2>&1
		echo "regress equal rc=$? (expect 0)" | tee -a "$LOG"
		ZB_ADAM_ISA=scalar timeout 90 $Z regress --baseline h200 --repeats 3 --db "$DB" >>"$LOG" 2>&1
		echo "regress planted (scalar Adam) rc=$? (expect 1)" | tee -a "$LOG"
		;;
	trace)
		step "trace"
		timeout 120 $Z run --model gpt-2.5b --micro-batch 4 --seq 2048 --policy dpu --ratio 0.25 --trace \
			--quiet --db "$DB" >>"$LOG" 2>&1
		echo "rc=$?" | tee -a "$LOG"
		timeout 30 $Z export latest --format perfetto --db "$DB" -o /tmp/trace-2.5b.json >>"$LOG" 2>&1 &&
			gzip -c /tmp/trace-2.5b.json >"$OUT/trace-2.5b.json.gz"
		timeout 200 $Z bench --filter trace --repeats ${ZB_TRACE_PAIRS:-3} --json >"$OUT/bench-trace.json" 2>>"$LOG"
		;;
	esac
done
step "done"
