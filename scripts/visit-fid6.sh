#!/usr/bin/env bash
# The fid suite with a measured time per configuration (issue 12), ONE device call of ~8-9 minutes:
#   run(command="scripts/visit-fid6.sh", carry=["build"], kind="nvidia-h200", timeout_s=600)
# Runs scripts/visit-fid.sh (validate --suite fid, then the replays on the GPU machine) with
# 4 warm-up steps and at least 8 measured steps per configuration, more for the fast ones so
# that each measures about ZB_MEASURE_S (3.5) seconds of steps (at most ZB_MAX_STEPS, 48): the
# 8-step means of run D were uncertain by up to 7 % (BENCHMARKS.md, run D). Then packs what
# it wrote for the device tool, which brings back at most 8 files of at most 16 MiB and 64 MiB
# together: results.tar.xz (the log, validate.json, the replays' JSON, the refitted profile)
# and the database as xz in parts of 15 MiB (fid.db.xz.part-aa, -ab, ...), left out (the log
# says so) when they would pass 60 MiB. Join: cat fid.db.xz.part-* | xz -d > fid.db
set -u
OUT=${OUT:?"OUT: the output folder of the device tool"}
WORK=/tmp/visit-fid6
rm -rf "$WORK" && mkdir -p "$WORK"
T0=$(date +%s)
OUT=$WORK ZB_WARMUP=${ZB_WARMUP:-4} ZB_STEPS=${ZB_STEPS:-8} ZB_MEASURE_S=${ZB_MEASURE_S:-3.5} \
	ZB_MAX_STEPS=${ZB_MAX_STEPS:-48} ZB_BUDGET=${ZB_BUDGET:-380} ZB_VALIDATE_S=${ZB_VALIDATE_S:-440} \
	ZB_TOTAL_S=${ZB_TOTAL_S:-530} ZB_REPLAY_S=${ZB_REPLAY_S:-60} bash scripts/visit-fid.sh >"$WORK/stdout.log" 2>&1
echo "visit-fid exit $? after $(($(date +%s) - T0)) s" | tee -a "$WORK/visit-fid.log"
tail -n 40 "$WORK/stdout.log"
DBX=$WORK/fid.db.xz
if [ ! -f "$DBX" ] && [ -f "$WORK/fid.db" ]; then
	xz -T0 -6 "$WORK/fid.db"
fi
if [ -f "$DBX" ]; then
	size=$(stat -c %s "$DBX")
	if [ "$size" -le $((60 * 1024 * 1024)) ]; then
		split -b 15M "$DBX" "$OUT/fid.db.xz.part-"
	else
		echo "fid.db.xz is $size bytes: over 60 MiB, not brought back" | tee -a "$WORK/visit-fid.log"
	fi
	rm -f "$DBX"
fi
tar cJf "$OUT/results.tar.xz" -C "$WORK" --exclude='fid.db*' .
ls -la "$OUT"
