#!/usr/bin/env bash
# compute-sanitizer (memcheck, racecheck) on the GPU tests, for issue 13; run on
# the GPU machine with build/ carried from the development machine (plain `make
# test` built the GPU test programs). Each tool's full output goes to
# $OUT/sanitizer-<tool>-<test>.log, the summary lines to $OUT/visit-hostile.log:
# compute-sanitizer ends every run with "ERROR SUMMARY: N errors".
#   OUT=/tmp/out scripts/visit-hostile.sh [memcheck] [racecheck]   (default both)
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
LOG=$OUT/visit-hostile.log
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=(memcheck racecheck)
{
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	"$CS" --version | tail -1
} | tee -a "$LOG"
fail=0
for tool in "${tools[@]}"; do
	for t in build/tests/gpu/test_*; do
		name=$(basename "$t")
		log=$OUT/sanitizer-$tool-$name.log
		echo "=== $tool $name ($(date +%T))" | tee -a "$LOG"
		# cmocka output in TAP; the GPU tests must not skip here
		ZBENCH=build/zbench ZB_REQUIRE_GPU=1 CMOCKA_MESSAGE_OUTPUT=TAP \
			timeout ${ZB_SANITIZER_TIMEOUT:-900} "$CS" --tool "$tool" --error-exitcode 99 \
			--target-processes all "$t" >"$log" 2>&1
		rc=$?
		summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
		echo "rc=$rc ${summary:-no summary} tests: $(grep -cE '^ok' "$log") ok, $(grep -cE '^not ok' "$log") not ok" |
			tee -a "$LOG"
		[ $rc -ne 0 ] && fail=1
	done
done
echo "visit-hostile: $([ $fail -eq 0 ] && echo "0 errors" || echo "ERRORS (see $OUT)")" | tee -a "$LOG"
exit $fail
