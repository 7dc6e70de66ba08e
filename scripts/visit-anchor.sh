#!/usr/bin/env bash
# A profile fitted on another lease, moved to this one and checked on it, in ONE device call
# (issue 12; analysis/kfit_host.h):
#   run(command="scripts/visit-anchor.sh", carry=["build/zbench", "build/lib"], timeout_s=600)
# 1. zbench validate --suite anchor (5 configurations, 2 rounds + 40 s of extra rounds, ~100-120 s),
#    predicted with the committed hw/h200-machine-executor.json (fitted on another lease);
# 2. calibrate --from-db anchor.db --fit-host over it: the moved profile, here.json;
# 3. zbench validate --suite fid with here.json, ZB_ROUNDS (3) rounds, budget ZB_BUDGET (400 s):
#    the moved profile out of sample on this lease (the anchor's four shapes are in fid too);
# 4. brings back results.tar.xz (logs, the two validate JSONs, here.json, anchor.db) and fid.db
#    as xz in parts of 15 MiB (join: cat fid.db.xz.part-* | xz -d > fid.db).
# Split over two calls of one lease (4 rounds of fid do not fit beside the rest in 600 s):
#   ZB_GPUTESTS=1 ZB_ROUNDS=0 scripts/visit-anchor.sh   the GPU tests, steps 1-2; here.json in $OUT
#   ZB_HERE=<here.json> ZB_ROUNDS=2 ZB_EXTRA_S=200 scripts/visit-anchor.sh   step 3 alone, with that
#   profile (ZB_EXTRA_S: validate --extra-s)
set -u
OUT=${OUT:?"OUT: the output folder of the device tool"}
W=/tmp/visit-anchor
rm -rf "$W" && mkdir -p "$W"
Z=build/zbench
HW=hw/h200-machine-executor.json
LOG=$W/visit-anchor.log
T0=$(date +%s)
step() { echo "=== $* (+$(($(date +%s) - T0)) s)" | tee -a "$LOG"; }
step "$($Z --version | head -1); $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); $(nproc) CPUs"
if [ "${ZB_GPUTESTS:-0}" = 1 ]; then
	step "GPU tests"
	ZB_GPUTESTS_BUDGET=${ZB_GPUTESTS_BUDGET:-150} bash scripts/visit-gputests.sh
	tail -1 "$OUT/gputests.log" | tee -a "$LOG"
fi
if [ -n "${ZB_HERE:-}" ]; then
	HERE=$ZB_HERE
else
	step "validate --suite anchor --hw $HW"
	$Z validate --suite anchor --hw "$HW" --db "$W/anchor.db" --json >"$W/anchor.json" 2>>"$LOG"
	echo "exit $?" | tee -a "$LOG"
	step "calibrate --fit-host"
	$Z calibrate --from-db "$W/anchor.db" --warmup 4 --base "$HW" --fit-host --out "$W/here.json" 2>&1 | tee -a "$LOG"
	HERE=$W/here.json
	[ -f "$HERE" ] && cp "$HERE" "$OUT/here.json"
	[ -f "$HERE" ] || HERE=$HW
fi
if [ "${ZB_ROUNDS:-3}" = 0 ]; then
	tar cJf "$OUT/results.tar.xz" -C "$W" .
	step "done"
	exit 0
fi
step "validate --suite fid --hw $HERE --rounds ${ZB_ROUNDS:-3} --extra-s ${ZB_EXTRA_S:-0}"
timeout -k 5 "${ZB_VALIDATE_S:-470}" $Z validate --suite fid --hw "$HERE" --rounds "${ZB_ROUNDS:-3}" \
	--extra-s "${ZB_EXTRA_S:-0}" --budget "${ZB_BUDGET:-400}" --db "$W/fid.db" >"$W/fid.txt" 2>>"$LOG"
echo "exit $?" | tee -a "$LOG"
grep -E "^step time|^speedups|^order|^rounds|^# wall" "$W/fid.txt" | tee -a "$LOG"
step "pack"
tar cJf "$OUT/results.tar.xz" -C "$W" --exclude=fid.db --exclude='fid.db-*' . # first: small, and it has fid.txt
xz -T0 -6 "$W/fid.db" && split -b 15M "$W/fid.db.xz" "$OUT/fid.db.xz.part-" && rm -f "$W/fid.db.xz"
step "done"
ls -la "$OUT"
