#!/usr/bin/env bash
# The GPU tests (what `make test-gpu` runs) on the device machine, from a carried build/,
# each under its own time limit, within ZB_GPUTESTS_BUDGET seconds (default 150; a test
# is not started with less than 20 s left). Writes $OUT/gputests.log, one line per test
# and the runner's TAP output; the summary line is the last.
set -u
OUT=${OUT:?"OUT: the output folder"}
mkdir -p "$OUT"
LOG=$OUT/gputests.log
BUDGET=${ZB_GPUTESTS_BUDGET:-150}
pass=0 fail=0 skip=0
for t in build/tests/gpu/test_*; do
	left=$((BUDGET - SECONDS))
	if [ "$left" -lt 20 ]; then
		echo "not run (budget): $t" | tee -a "$LOG"
		skip=$((skip + 1))
		continue
	fi
	start=$SECONDS
	ZBENCH=build/zbench ZB_REQUIRE_GPU=1 timeout -k 5 "$left" tests/run.sh "$t" >"/tmp/gputest.out" 2>&1
	rc=$?
	cat /tmp/gputest.out >>"$LOG"
	if [ "$rc" -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
	echo "== $t exit $rc in $((SECONDS - start)) s" | tee -a "$LOG"
done
echo "gpu test programs: $pass passed, $fail failed, $skip not run" | tee -a "$LOG"
