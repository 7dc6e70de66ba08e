#!/usr/bin/env bash
# Second 2-GPU visit for issue 14 (helper mgpu2), ONE call of about 400 s on the
# 2-GPU machine:
#   run(command="scripts/visit-mgpu2.sh", carry=["build", ".whl"], kind="nvidia-h200-x2",
#       timeout_s=440)
# Needs build/ from the development machine (`make -j2`) and, for DeepSpeed, the
# wheels of .whl/ (installed with pip --no-index --target /tmp/site, as
# scripts/visit-mgpu.sh). NCCL comes from the torch wheel's nvidia.nccl package.
# What it measures (each part stops starting work past its share of the budget):
#   1. CPU Adam of two ranks at once: two `zbench bench --filter cpu-adam --threads 16`
#      at the same time on the two halves of the cores (the executor's and DeepSpeed's
#      per-rank pools), against the whole-host curve of the v2 calibrate; ~25 s
#   2. `zbench run --gpus 2` on configurations the v2 visit did not run (threads per
#      rank, micro-batch, gas, a 2.5B-shaped model of 8 layers, ZeRO-1/3), two v2
#      repeats for run-to-run spread, and ZB_COMM_PRIORITY=high twins (the collectives'
#      stream at top priority); predicted with hw/h200-x2-executor.json; ~225 s
#   3. DeepSpeed ZeRO-2 offload (s2-off, 2.5B) on 2 GPUs with DeepSpeed's own timers
#      (wall_clock_breakdown, printed every step: forward, backward_inner,
#      backward_allreduce, optimizer_gradients/step/allgather); ~130 s; then on one
#      GPU the same if 110 s are left
#   4. the replay (`zbench calibrate --from-db --all-runs --eval`): step and collective
#      transfer times against the model, offline on the measured runs
# Writes under $OUT (at most 8 files): mgpu2.log (everything, in order), adam-pair.txt,
# runs.tsv (name, config id, predicted and measured step, per-rank steps),
# replay.txt, runs.db.xz (every run with its rank tables), ds.tgz (DeepSpeed logs).
# Environment: ZB_MGPU2_BUDGET (s, default 390): the whole call's budget.
. "$(dirname "$0")/mgpu-env.sh"
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
Z=build/zbench
DB=$OUT/runs.db
LOG=$OUT/mgpu2.log
TSV=$OUT/runs.tsv
HW=hw/h200-x2-executor.json
PYTHON=${PYTHON:-python3}
BUDGET=${ZB_MGPU2_BUDGET:-390}
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }

mgpu_env "$LOG"

# ---- 1. CPU Adam, two pools at once ---------------------------------------------------
N=$(nproc)
H=$((N / 2))
step "CPU Adam: two pools of $H threads at once (cores 0-$((H - 1)) and $H-$((N - 1)))"
taskset -c 0-$((H - 1)) timeout 60 $Z bench --filter cpu-adam --threads $H --repeats 5 >"$OUT/adam-a.txt" 2>&1 &
pa=$!
taskset -c $H-$((N - 1)) timeout 60 $Z bench --filter cpu-adam --threads $H --repeats 5 >"$OUT/adam-b.txt" 2>&1 &
pb=$!
wait $pa
wait $pb
{
	echo "# pool A (cores 0-$((H - 1))) and pool B ($H-$((N - 1))), run at the same time"
	paste "$OUT/adam-a.txt" "$OUT/adam-b.txt"
} >"$OUT/adam-pair.txt"
rm -f "$OUT/adam-a.txt" "$OUT/adam-b.txt"
cat "$OUT/adam-pair.txt" | tee -a "$LOG"

# ---- 2. zbench run --gpus 2 -------------------------------------------------------------
L="--model gpt2-large --seq 1024 --micro-batch 8"
B8="--model gpt-2.5b --layers 8 --seq 2048 --micro-batch 4"
# name, environment (- for none), then zbench run arguments (all with --gpus 2)
runs=(
	"large-none            -                    $L --policy none"
	"large-overlap         -                    $L --policy overlap --ratio 1"
	"large-offload-t8      -                    $L --policy offload --ratio 1 --threads 8"
	"large-overlap-t8      -                    $L --policy overlap --ratio 1 --threads 8"
	"b8-none               -                    $B8 --policy none"
	"b8-none-pri           ZB_COMM_PRIORITY=high $B8 --policy none"
	"b8-overlap            -                    $B8 --policy overlap --ratio 1"
	"b8-overlap-pri        ZB_COMM_PRIORITY=high $B8 --policy overlap --ratio 1"
	"large-overlap-mb4     -                    --model gpt2-large --seq 1024 --micro-batch 4 --policy overlap --ratio 1"
	"large-ovl-0.5-gas2    -                    $L --policy overlap --ratio 0.5 --gas 2"
	"large-none-pri        ZB_COMM_PRIORITY=high $L --policy none"
	"large-dpu-0.5-z1      -                    $L --policy dpu --ratio 0.5 --zero-stage 1"
	"large-ovl-0.5-z3      -                    $L --policy overlap --ratio 0.5 --zero-stage 3"
)
RUNS_END=$((BUDGET * 55 / 100))
printf "run\tconfig\tenv\tpred_ms\tmeas_ms\terr_%%\trank_ms\n" >"$TSV"
for r in "${runs[@]}"; do
	if [ "$SECONDS" -gt "$RUNS_END" ]; then
		echo "skipped (past ${RUNS_END}s): $r" | tee -a "$LOG"
		continue
	fi
	set -- $r
	name=$1 env=$2
	shift 2
	step "run $name ($env): $* --gpus 2"
	if [ "$env" = - ]; then
		timeout 90 $Z run --hw "$HW" --gpus 2 "$@" --steps 4 --warmup 2 --json --db "$DB" >"$OUT/run.json" 2>>"$LOG"
	else
		env "$env" timeout 90 $Z run --hw "$HW" --gpus 2 "$@" --steps 4 --warmup 2 --json --db "$DB" \
			>"$OUT/run.json" 2>>"$LOG"
	fi
	echo "rc=$?" | tee -a "$LOG"
	"$PYTHON" - "$OUT/run.json" "$DB" "$name" "$env" <<'PY' | tee -a "$TSV" | tee -a "$LOG"
import json, sqlite3, sys
f, db, name, env = sys.argv[1:5]
try:
    j = json.load(open(f))
    cid = sqlite3.connect(db).execute("SELECT max(id) FROM configs").fetchone()[0]
except Exception as e:
    print(f"{name}\t-\t{env}\tunreadable: {e}")
    sys.exit(0)
p, m = j.get("predicted", {}), j.get("measured", {})
ps, ms = p.get("step_time_s") or 0, m.get("step_time_s") or 0
ranks = ",".join("%.1f" % (r["step_time_s"] * 1e3) for r in j.get("ranks", []))
e = 100 * (ps - ms) / ms if ms else float("nan")
print(f"{name}\t{cid}\t{env}\t{ps*1e3:.2f}\t{ms*1e3:.2f}\t{e:+.1f}\t{ranks}")
PY
	rm -f "$OUT/run.json"
done

# ---- 3. DeepSpeed s2-off with its timers --------------------------------------------------
if ! "$PYTHON" -c 'import deepspeed' >/dev/null 2>&1; then
	pip install --no-index --no-deps --target /tmp/site .whl/*.whl >>"$LOG" 2>&1 ||
		echo "pip install of .whl/*.whl failed" | tee -a "$LOG"
	export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
"$PYTHON" -c 'import json; c = json.load(open("peers/configs/s2-off.json")); c["wall_clock_breakdown"] = True; c["steps_per_print"] = 1; json.dump(c, open("/tmp/s2-off-wcb.json", "w"), indent=1)'
mkdir -p "$OUT/ds"
SHAPE="--family gpt --layers 32 --hidden 2560 --heads 32 --vocab 50257 --seq 2048 --micro-batch 4"
ds_run() { # world size, log name, minimum seconds
	local left=$((BUDGET - 20 - SECONDS))
	if [ $left -lt "$3" ]; then
		step "DeepSpeed s2-off on $1 GPU(s): skipped, ${left}s left"
		return
	fi
	step "DeepSpeed s2-off on $1 GPU(s), DeepSpeed timers, timeout ${left}s"
	# shellcheck disable=SC2086
	timeout $left "$PYTHON" peers/ds_step.py $SHAPE --steps 7 --ds-config /tmp/s2-off-wcb.json \
		--world-size "$1" >"$OUT/ds/$2.log" 2>&1
	echo "rc=$?" | tee -a "$LOG"
	grep -hE "^ds_step: (rank|[0-9]+ ranks)|^\{\"harness\"" "$OUT/ds/$2.log" | cut -c1-600 | tee -a "$LOG"
	grep -E "time \(ms\)" "$OUT/ds/$2.log" | tail -12 | tee -a "$LOG"
}
ds_run 2 s2-off-wcb-2gpu 100
ds_run 1 s2-off-wcb-1gpu 110
tar -czf "$OUT/ds.tgz" -C "$OUT" ds && rm -rf "$OUT/ds"

# ---- 4. the replay --------------------------------------------------------------------
"$PYTHON" -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.execute("PRAGMA journal_mode=DELETE"); c.close()' "$DB" 2>>"$LOG"
step "replay: calibrate --from-db --all-runs --eval $HW"
timeout 60 $Z calibrate --from-db "$DB" --all-runs --eval "$HW" --base h200-x2 >"$OUT/replay.txt" 2>&1
echo "rc=$?" | tee -a "$LOG"
tail -22 "$OUT/replay.txt" | tee -a "$LOG"
xz -T0 -6 "$DB" 2>>"$LOG" || gzip "$DB"
step "done"
ls -la "$OUT" | tee -a "$LOG"
