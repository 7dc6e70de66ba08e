#!/usr/bin/env bash
# 2-GPU visit for issue 14 (helper mgpu4): what makes ZeRO-1/3's CPU Adam slower than
# ZeRO-2's on the x2 host (BENCHMARKS.md, mgpu4 section 2). ONE call of about 500 s:
#   run(command="scripts/visit-mgpu4.sh", carry=["build"], kind="nvidia-h200-x2", timeout_s=580)
# Needs build/ from the development machine (`make -j2`); NCCL from the image's
# nvidia.nccl Python package (as scripts/visit-mgpu2.sh).
# What it runs (`zbench run --gpus 2`, gpt2-large, seq 1024, micro-batch 8, overlap ratio 1,
# 6 steps of which 2 warm-up), in this order so that host drift shows as a difference
# between the two rounds rather than between stages:
#   round 1 and round 2: ZeRO-2, ZeRO-3, ZeRO-1 (run-to-run spread; v2 ran each once)
#   then ZeRO-2 and ZeRO-3 with 15 Adam threads a rank (one core a rank left to the
#   dispatchers and NCCL's threads: if ZeRO-3's Adam recovers, the host threads were it;
#   the model then applies no starvation at all, an out-of-sample check of starved_s)
#   then five configurations no earlier 2-GPU visit ran (dpu 0.5, overlap 0.5 ZeRO-1,
#   offload ZeRO-3, gpt2-xl overlap 0.5 and dpu ZeRO-3): a validation set that no
#   parameter of hw/h200-x2-executor.json was fitted to
# and the replay (`calibrate --from-db --all-runs --eval hw/h200-x2-executor.json`), then
# scripts/adam-pools.py and scripts/rank-waits.py on the runs (Adam of both pools by what
# else runs; each rank's GPU wait beside Adam; reference: the ZeRO-2 run of round 1 has
# Adam, so rank-waits uses the `none` run added first).
# Writes under $OUT: mgpu4.log (everything), runs.tsv, replay.txt, pools.txt, waits.txt,
# runs.db.xz. Environment: ZB_MGPU4_BUDGET (s, default 500).
. "$(dirname "$0")/mgpu-env.sh"
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
Z=build/zbench
DB=$OUT/runs.db
LOG=$OUT/mgpu4.log
TSV=$OUT/runs.tsv
HW=hw/h200-x2-executor.json
PYTHON=${PYTHON:-python3}
BUDGET=${ZB_MGPU4_BUDGET:-500}
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }

mgpu_env "$LOG"

L="--model gpt2-large --seq 1024 --micro-batch 8"
O="$L --policy overlap --ratio 1"
runs=(
	"none-z2     $L --policy none"
	"z2-a        $O --zero-stage 2"
	"z3-a        $O --zero-stage 3"
	"z1-a        $O --zero-stage 1"
	"z2-b        $O --zero-stage 2"
	"z3-b        $O --zero-stage 3"
	"z1-b        $O --zero-stage 1"
	"z2-t15      $O --zero-stage 2 --threads 15"
	"z3-t15      $O --zero-stage 3 --threads 15"
	"dpu-05      $L --policy dpu --ratio 0.5 --zero-stage 2"
	"ovl-05-z1   $L --policy overlap --ratio 0.5 --zero-stage 1"
	"off-z3      $L --policy offload --zero-stage 3"
	"xl-ovl-05   --model gpt2-xl --seq 1024 --micro-batch 4 --policy overlap --ratio 0.5 --zero-stage 2"
	"xl-dpu-z3   --model gpt2-xl --seq 1024 --micro-batch 4 --policy dpu --ratio 1 --zero-stage 3"
)
RUNS_END=$((BUDGET - 40))
printf "run\tconfig\tpred_ms\tmeas_ms\terr_%%\trank_ms\n" >"$TSV"
for r in "${runs[@]}"; do
	if [ "$SECONDS" -gt "$RUNS_END" ]; then
		echo "skipped (past ${RUNS_END}s): $r" | tee -a "$LOG"
		continue
	fi
	set -- $r
	name=$1
	shift
	step "run $name: $* --gpus 2"
	timeout 60 $Z run --hw "$HW" --gpus 2 "$@" --steps 4 --warmup 2 --json --db "$DB" >"$OUT/run.json" 2>>"$LOG"
	echo "rc=$?" | tee -a "$LOG"
	"$PYTHON" - "$OUT/run.json" "$DB" "$name" <<'PY' | tee -a "$TSV" | tee -a "$LOG"
import json, sqlite3, sys
f, db, name = sys.argv[1:4]
try:
    j = json.load(open(f))
    cid = sqlite3.connect(db).execute("SELECT max(id) FROM configs").fetchone()[0]
except Exception as e:
    print(f"{name}\t-\tunreadable: {e}")
    sys.exit(0)
p, m = j.get("predicted", {}), j.get("measured", {})
ps, ms = p.get("step_time_s") or 0, m.get("step_time_s") or 0
ranks = ",".join("%.1f" % (r["step_time_s"] * 1e3) for r in j.get("ranks", []))
e = 100 * (ps - ms) / ms if ms else float("nan")
print(f"{name}\t{cid}\t{ps*1e3:.2f}\t{ms*1e3:.2f}\t{e:+.1f}\t{ranks}")
PY
	rm -f "$OUT/run.json"
done

"$PYTHON" -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.execute("PRAGMA journal_mode=DELETE"); c.close()' "$DB" 2>>"$LOG"
step "replay: calibrate --from-db --all-runs --eval $HW"
timeout 60 $Z calibrate --from-db "$DB" --all-runs --eval "$HW" --base h200-x2 >"$OUT/replay.txt" 2>&1
echo "rc=$?" | tee -a "$LOG"
tail -16 "$OUT/replay.txt" | tee -a "$LOG"
step "two Adam pools by what else runs; GPU waits per rank"
REF=$(grep -P '^none-z2\t' "$TSV" | cut -f2)
timeout 60 "$PYTHON" scripts/adam-pools.py "$DB" >"$OUT/pools.txt" 2>&1
ZB_REF=${REF:-1} timeout 60 "$PYTHON" scripts/rank-waits.py "$DB" >"$OUT/waits.txt" 2>&1
cat "$OUT/pools.txt" "$OUT/waits.txt" | tee -a "$LOG"
xz -T0 -6 "$DB" 2>>"$LOG" || gzip "$DB"
step "done"
ls -la "$OUT" | tee -a "$LOG"
