#!/usr/bin/env bash
# Issue 12's "faster link, slower step" measured on the GPU machine, in ONE device call of
# at most ~240 s (nvidia-h200-x2: 2 H200s, 32 cores; one GPU used). Both sides of every
# comparison run on this host, so nothing is compared across machines. Binaries come
# built from the development machine in build/ (plain `make`, with nvcc).
#
#   1. zbench validate --suite link --hw h200-x2: dpu ratio 1 (the CPU flow decides, copies
#      overlap Adam) for gpt-2.5b (seq 2048, micro-batch 4) and gpt2-large (micro-batch 4)
#      at the native link and paced to 25 GB/s (gen4; gpt2-large also 12, gen3), with 16
#      threads and with all 32; 2 warm-up + 4 measured steps. No configuration starts
#      after ZB_BUDGET (200 s); hard limit ZB_VALIDATE_S (225 s); each is committed as it
#      ends.
#   2. Replays (CPU only, seconds): the h200-x2 preset and a profile refitted on these
#      measurements (calibrate --from-db, in-sample), each ZB_REPLAY_S (8 s).
# $OUT gets: visit-fid2.log (every summary), link.json (validate --json), link.db (or
# link-db.tar with its -wal when validate was cut off), preset.json, refit.json,
# hw-link-refit.json, lscpu.txt.
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
Z=build/zbench
LOG=$OUT/visit-fid2.log
DB=$OUT/link.db
T0=$(date +%s)
# the host's preset: the 2-GPU machine's CPU differs from the single H200 machine's
HW=${ZB_HW:-$([ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ] && echo h200-x2 || echo h200-machine)}
step() { echo "=== $* ($(date +%T), +$(($(date +%s) - T0)) s)" | tee -a "$LOG"; }

step "$($Z --version 2>&1 | head -1); $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); $(nproc) CPUs"
lscpu >"$OUT/lscpu.txt" 2>&1
rm -f "$DB"
step "validate --suite link --hw $HW"
timeout -k 5 "${ZB_VALIDATE_S:-225}" $Z validate --suite link --hw "$HW" --warmup 2 --steps 4 \
	--budget "${ZB_BUDGET:-200}" --db "$DB" --json >"$OUT/link.json" 2>>"$LOG"
echo "validate exit $?" | tee -a "$LOG"
python3 - "$OUT/link.json" <<'EOF' 2>&1 | tee -a "$LOG"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("link.json unreadable:", e); sys.exit(0)
for c in d["configs"]:
    e = c.get("error")
    print("%-52s pred %8.2f meas %8s err %s wall %s %s" % (c["key"], 1e3 * (c["predicted_step_s"] or 0),
          "%.2f" % (1e3 * c["measured_step_s"]) if c["measured_step_s"] else "-",
          "%+.1f%%" % (100 * e) if e is not None else "-", c.get("wall_s"), c.get("skipped", "")))
print("summary", json.dumps(d["summary"]))
EOF
RDB=/tmp/zbench-link-replay.db # the replays read a copy: no -shm/-wal of a reader in $OUT
rm -f "$RDB" "$RDB-wal" "$RDB-shm"
for f in "$DB" "$DB-wal"; do [ -f "$f" ] && cp "$f" "$RDB${f#$DB}"; done
replay() { # name, flags
	local name=$1
	shift
	step "replay $name: calibrate --from-db $*"
	timeout -k 2 "${ZB_REPLAY_S:-8}" $Z calibrate --from-db "$RDB" "$@" >>"$LOG" 2>&1
	timeout -k 2 "${ZB_REPLAY_S:-8}" $Z calibrate --from-db "$RDB" "$@" --json >"$OUT/$name.json" 2>>"$LOG"
}
replay preset --eval "$HW"
replay refit --base "$HW" --out "$OUT/hw-link-refit.json"
if ls "$DB"-* >/dev/null 2>&1; then # a cut-off validate leaves its -wal: one file
	tar cf "$OUT/link-db.tar" -C "$OUT" $(cd "$OUT" && ls link.db*) && rm -f "$DB" "$DB"-*
fi
step "done"
ls -la "$OUT" | tee -a "$LOG"
