#!/usr/bin/env bash
# The fid suite with a measured time per configuration (issue 12), ONE device call of ~9 minutes:
#   run(command="scripts/visit-fid6.sh", carry=["build"], kind="nvidia-h200", timeout_s=600)
# 1. scripts/visit-fid.sh's validate (its own replays off) with 4 warm-up steps and at least 8
#    measured steps per configuration, more for the fast ones so that each measures about
#    ZB_MEASURE_S (3) seconds of steps (at most ZB_MAX_STEPS, 48): the 8-step means of run D
#    were uncertain by up to 7 % (BENCHMARKS.md, run D).
# 2. The replays, most important first, each only while the call has time left (ZB_END_S, 560 s
#    after the start): the profile refitted on this run (in-sample, half-out, holdout
#    gpt2-large), the committed executor profile, the preset.
# 3. Packs it for the device tool, which brings back at most 8 files of at most 16 MiB and 64 MiB
#    together: results.tar.xz (logs, validate.json, the replays' JSON, the refitted profile) and
#    the database as xz in parts of 15 MiB (fid.db.xz.part-aa, -ab, ...; left out, the log says
#    so, past 60 MiB). Join: cat fid.db.xz.part-* | xz -d > fid.db
set -u
OUT=${OUT:?"OUT: the output folder of the device tool"}
WORK=/tmp/visit-fid6
rm -rf "$WORK" && mkdir -p "$WORK"
T0=$(date +%s)
LOG=$WORK/visit-fid6.log
END=${ZB_END_S:-560}
OUT=$WORK ZB_WARMUP=4 ZB_STEPS=8 ZB_MEASURE_S=${ZB_MEASURE_S:-3} ZB_MAX_STEPS=${ZB_MAX_STEPS:-48} \
	ZB_BUDGET=${ZB_BUDGET:-400} ZB_VALIDATE_S=${ZB_VALIDATE_S:-440} ZB_TOTAL_S=0 \
	bash scripts/visit-fid.sh >"$WORK/stdout.log" 2>&1
echo "visit-fid exit $? after $(($(date +%s) - T0)) s" | tee -a "$LOG"
tail -n 50 "$WORK/stdout.log"
DB=$WORK/fid.db
[ -f "$DB" ] || { [ -f "$DB.xz" ] && xz -d -k -T0 "$DB.xz"; }
[ -f "$DB" ] || { [ -f "$WORK/fid-db.tar.xz" ] && tar xJf "$WORK/fid-db.tar.xz" -C "$WORK"; }
RDB=/tmp/zbench-fid6-replay.db # a copy: no reader's -shm/-wal files next to the database
rm -f "$RDB" "$RDB-wal" "$RDB-shm"
for f in "$DB" "$DB-wal"; do [ -f "$f" ] && cp "$f" "$RDB${f#$DB}"; done
replay() { # name, seconds it may take, flags
	local name=$1 limit=$2
	shift 2
	local left=$((END - 30 - ($(date +%s) - T0)))
	if [ "$left" -lt "$limit" ]; then
		echo "replay $name: skipped, $left s left" | tee -a "$LOG"
		return
	fi
	echo "=== replay $name: calibrate --from-db --warmup 4 $* ($(($(date +%s) - T0)) s)" | tee -a "$LOG"
	timeout -k 5 "$limit" build/zbench calibrate --from-db "$RDB" --warmup 4 "$@" --json >"$WORK/$name.json" 2>>"$LOG"
	echo "exit $?" | tee -a "$LOG"
	python3 - "$WORK/$name.json" <<'PY' | tee -a "$LOG"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("unreadable:", e); sys.exit(0)
for k in ("base", "eval", "fitted", "half_out"):
    if isinstance(d.get(k), dict):
        s = d[k]
        print("%-9s MAPE %.2f%% worst %.1f%% within 3%%/8%%: %s/%s speedups %s/%s order swaps %s of %s" % (
            k, 100 * s["mape"], 100 * s["max_abs_err"], s["within_3pct"], s["within_8pct"],
            s["speedups_within_5pct"], s["speedups"], s["order_swaps"], s["order_pairs"]))
PY
}
if [ -f "$RDB" ]; then
	replay refit 90 --base h200-machine --out "$WORK/hw-fid-refit.json" --holdout gpt2-large
	replay committed 40 --eval hw/h200-machine-executor.json
	replay preset 40 --eval h200-machine
fi
rm -f "$RDB" "$RDB-wal" "$RDB-shm" "$DB"
for x in "$WORK/fid.db.xz" "$WORK/fid-db.tar.xz"; do
	[ -f "$x" ] || continue
	size=$(stat -c %s "$x")
	if [ "$size" -le $((60 * 1024 * 1024)) ]; then
		split -b 15M "$x" "$OUT/$(basename "$x").part-"
	else
		echo "$(basename "$x") is $size bytes: over 60 MiB, not brought back" | tee -a "$LOG"
	fi
	rm -f "$x"
done
tar cJf "$OUT/results.tar.xz" -C "$WORK" .
echo "done after $(($(date +%s) - T0)) s" | tee -a "$LOG"
ls -la "$OUT"
