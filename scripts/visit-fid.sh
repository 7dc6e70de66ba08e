#!/usr/bin/env bash
# What to run on the GPU machine for issue 12 (prediction within 3% of the executed
# schedule), in ONE device call of at most ~8 minutes. Binaries come built from the
# development machine in build/ (plain `make`, with nvcc); nothing is compiled here.
#
#   1. zbench validate --suite fid (44 configurations: native link, --link-rate 12 and
#      25 GB/s, 2..16 threads, pageable, ckpt, parameter offload, GQA, flash and eager)
#      on the GPU, predicted with the committed executor profile
#      hw/h200-machine-executor.json (fitted on another run: out-of-sample). No
#      configuration starts after ZB_BUDGET (400 s); hard limit ZB_VALIDATE_S (440 s);
#      every configuration is committed as it ends, so a cut-off run still leaves the
#      configurations it finished. Steps (the fid suite's own defaults): ZB_WARMUP (4) warm-up
#      and ZB_STEPS (8) measured steps at least; ZB_MEASURE_S (3, 0: off) gives every
#      configuration about that many seconds of measured steps, ceil(ZB_MEASURE_S /
#      predicted step) within ZB_STEPS .. ZB_MAX_STEPS (48): a fast, noisy configuration
#      (~75 ms, per-step sd up to 20 %)
#      then runs many steps and a slow, steady one few (validate --measure-s; the
#      table's "±" column is each measured mean's standard error). ZB_ROUNDS (2): every
#      configuration in that many rounds, the suite forward then backward (validate --rounds);
#      ZB_EXTRA_S (0; the suite's own default is 120): then that many seconds of extra
#      rounds for the least sure configurations (validate --extra-s).
#   2. Replays of the same measurements through the simulator (CPU only, seconds each):
#      the h200-machine preset alone, the committed profile, and a profile refitted on
#      this very run (`zbench calibrate --from-db`: in-sample, and fitted on half the
#      configurations predicting the other half, and without gpt2-large predicting it).
#      ZB_REPLAY_S (20 s) each, skipped when the visit would pass ZB_TOTAL_S (560 s). The
#      refit of a whole fid run takes ~2 minutes (run E: 122 s on dev) and is cut off at
#      20 s: replay it from fid.db.xz on the development machine, or use
#      scripts/visit-fid6.sh, which gives it the time left of the call.
# $OUT gets 7 files (at most 8 come back): visit-fid.log (every summary), validate.json,
# fid.db.xz (xz -T0 -6: only files up to 16 MiB come back, and a 64 MB fid.db was lost;
# fid-db.tar.xz with its -wal when validate was cut off; uncompressed when xz is
# missing), preset.json, committed.json, refit.json (the replays, --json),
# hw-fid-refit.json (the refitted profile). ZB_SKIP_VALIDATE=1 only replays an fid.db
# already in $OUT (to test the script).
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
Z=build/zbench
LOG=$OUT/visit-fid.log
DB=$OUT/fid.db
HW=hw/h200-machine-executor.json
T0=$(date +%s)
WARMUP=${ZB_WARMUP:-4} # warm-up and measured steps: ZB_WARMUP (4) and ZB_STEPS (8)
step() { echo "=== $* ($(date +%T), +$(($(date +%s) - T0)) s)" | tee -a "$LOG"; }

step "$($Z --version 2>&1 | head -1); $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); $(nproc) CPUs"
if [ -z "${ZB_SKIP_VALIDATE:-}" ]; then # (set: replay an fid.db already in $OUT, for testing the script)
rm -f "$DB"
step "validate --suite fid --hw $HW"
timeout -k 5 "${ZB_VALIDATE_S:-440}" $Z validate --suite fid --hw "$HW" --budget "${ZB_BUDGET:-400}" --db "$DB" \
	--warmup "$WARMUP" --steps "${ZB_STEPS:-8}" --measure-s "${ZB_MEASURE_S:-3}" --max-steps "${ZB_MAX_STEPS:-48}" \
	--rounds "${ZB_ROUNDS:-2}" --extra-s "${ZB_EXTRA_S:-0}" \
	--json >"$OUT/validate.json" 2>>"$LOG"
echo "validate exit $?" | tee -a "$LOG"
fi
python3 - "$OUT/validate.json" <<'EOF' 2>&1 | tee -a "$LOG"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("validate.json unreadable:", e); sys.exit(0)
for c in d["configs"]:
    e = c.get("error")
    se, m = c.get("measured_se_s"), c["measured_step_s"]
    print("%-58s pred %8.2f meas %8s err %s +- %s steps %s wall %s %s" % (c["key"], 1e3 * (c["predicted_step_s"] or 0),
          "%.2f" % (1e3 * m) if m else "-",
          "%+.1f%%" % (100 * e) if e is not None else "-", "%.1f%%" % (100 * se / m) if se and m else "-",
          c.get("steps"), c.get("wall_s"), c.get("skipped", "")))
print("summary", json.dumps(d["summary"]), "order", json.dumps(d.get("order")))
print("speedups", json.dumps(d.get("speedups")))
EOF
# the replays read a copy, so that no reader's -shm/-wal files land in $OUT
RDB=/tmp/zbench-fid-replay.db
rm -f "$RDB" "$RDB-wal" "$RDB-shm"
for f in "$DB" "$DB-wal"; do [ -f "$f" ] && cp "$f" "$RDB${f#$DB}"; done
replay() { # name, flags: calibrate --from-db on this run's measurements
	local name=$1
	shift
	local left=$((${ZB_TOTAL_S:-560} - ($(date +%s) - T0)))
	if [ "$left" -lt $((2 * ${ZB_REPLAY_S:-20} + 10)) ]; then # the whole visit stays under ~9.5 minutes
		step "replay $name: skipped, $left s left"
		return
	fi
	step "replay $name: calibrate --from-db $*"
	timeout -k 5 "${ZB_REPLAY_S:-20}" $Z calibrate --from-db "$RDB" --warmup "$WARMUP" "$@" >>"$LOG" 2>&1
	timeout -k 5 "${ZB_REPLAY_S:-20}" $Z calibrate --from-db "$RDB" --warmup "$WARMUP" "$@" --json >"$OUT/$name.json" 2>>"$LOG"
}
replay preset --eval h200-machine
replay committed --eval "$HW"
replay refit --base h200-machine --out "$OUT/hw-fid-refit.json" --holdout gpt2-large
if ls "$DB"-* >/dev/null 2>&1; then # a cut-off validate leaves its -wal: one file, as at most 8 come back
	tar cf "$OUT/fid-db.tar" -C "$OUT" $(cd "$OUT" && ls fid.db*) && rm -f "$DB" "$DB"-*
fi
# only files up to 16 MiB come back: compress the database (timelines compress well)
for f in "$DB" "$OUT/fid-db.tar"; do
	[ -f "$f" ] || continue
	if command -v xz >/dev/null; then
		step "xz -T0 -6 $(basename "$f") ($(($(stat -c %s "$f") >> 20)) MiB)"
		xz -T0 -6 -f "$f" 2>>"$LOG" || echo "xz failed: $(basename "$f") left as it is" | tee -a "$LOG"
	else
		echo "no xz: $(basename "$f") left uncompressed" | tee -a "$LOG"
	fi
	for g in "$f.xz" "$f"; do
		[ -f "$g" ] && [ "$(stat -c %s "$g")" -gt $((16 << 20)) ] &&
			echo "WARNING: $(basename "$g") is over 16 MiB and will not come back" | tee -a "$LOG"
	done
done
step "done"
ls -la "$OUT" | tee -a "$LOG"
