#!/usr/bin/env bash
# GPU visit for several GPUs per node (issue 14, executor side), on the 2-GPU machine
# (device kind nvidia-h200-x2), in ONE call of about 8 minutes:
#   run(command="scripts/visit-mgpu.sh", carry=["build", ".whl"], kind="nvidia-h200-x2")
# Needs build/ from the development machine (`make -j2 test` there builds zbench and
# the tests) and, for the DeepSpeed run, the wheels of .whl/ (as scripts/visit-deepspeed.sh).
# NCCL comes from the Python package nvidia-nccl-cu13 (LD_LIBRARY_PATH set below).
# Writes under $OUT (6 files):
#   mgpu.log          everything, in order, and the summary table at the end
#   tests.log         tests/gpu/test_mgpu_exec (collectives vs host reference, 2-rank
#                     runs) and, if time is left at the end, tests/gpu/test_executor
#   bench-nccl.json   zbench bench --filter nccl: busbw and latency, ring fit
#   hw-x2.json        zbench calibrate's profile of this machine, fabric from NCCL
#   summary.tsv       one line per `zbench run --gpus 2`: predicted, measured, error,
#                     comm busy predicted/measured, parameter digests of both ranks
#   zbench.db         every run (ranks, rank_events), calibrate, the DeepSpeed run
# Environment: ZB_MGPU_BUDGET (s, default 360): runs that would start later are skipped;
# ZB_MGPU_DS (default 1): the DeepSpeed ZeRO-2 offload run on 2 GPUs.
. "$(dirname "$0")/mgpu-env.sh"
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
Z=build/zbench
DB=$OUT/zbench.db
LOG=$OUT/mgpu.log
PYTHON=${PYTHON:-python3}
step() { echo "=== $* ($(date -u +%T), ${SECONDS}s)" | tee -a "$LOG"; }

mgpu_env "$LOG"
nvidia-smi topo -m 2>&1 | head -5 | tee -a "$LOG"

step "GPU test: collectives vs host reference, 2-rank runs"
{
	ZB_REQUIRE_GPU=1 timeout 120 build/tests/gpu/test_mgpu_exec
	echo "test_mgpu_exec rc=$?"
} >"$OUT/tests.log" 2>&1
grep -E "rc=|OK|FAILED|ERROR|error|skipped|digests" "$OUT/tests.log" | tee -a "$LOG"

step "bench nccl"
NCCL_DEBUG=WARN timeout 90 $Z bench --filter nccl --json >"$OUT/bench-nccl.json" 2>>"$LOG"
echo "rc=$?" | tee -a "$LOG"

# base: hw/h200-x2-deepspeed.json (the H200 slice doubled, DeepSpeed's fitted profile, which the
# DeepSpeed prediction below needs and calibrate carries over); measured: link, GPU, CPU, fabric
step "calibrate (fabric from NCCL, GEMMs of gpt2-large and gpt-2.5b)"
HW=hw/h200-x2-deepspeed.json
timeout 120 $Z calibrate --base hw/h200-x2-deepspeed.json --name h200-x2-cal --model gpt2-large,gpt-2.5b \
	--out "$OUT/hw-x2.json" --db "$DB" >>"$LOG" 2>&1
rc=$?
echo "rc=$rc" | tee -a "$LOG"
if [ $rc -eq 0 ] && [ -s "$OUT/hw-x2.json" ]; then
	HW=$OUT/hw-x2.json
	grep -E '"(intra_bus_Bps|intra_latency_s)"' "$OUT/hw-x2.json" | tee -a "$LOG"
fi
echo "runs use --hw $HW" | tee -a "$LOG"

# name, then zbench run arguments (all with --gpus 2)
L="--model gpt2-large --seq 1024 --micro-batch 8"
B="--model gpt-2.5b --seq 2048 --micro-batch 4"
runs=(
	"large-none        $L --policy none"
	"large-offload     $L --policy offload --ratio 1"
	"large-overlap     $L --policy overlap --ratio 1"
	"large-overlap-0.5 $L --policy overlap --ratio 0.5"
	"large-overlap-0.2 $L --policy overlap --ratio 0.2"
	"large-dpu         $L --policy dpu --ratio 1"
	"large-dpu-0.5     $L --policy dpu --ratio 0.5"
	"large-overlap-z1  $L --policy overlap --ratio 1 --zero-stage 1"
	"large-overlap-z3  $L --policy overlap --ratio 1 --zero-stage 3"
	"large-none-z3     $L --policy none --zero-stage 3"
	"2.5b-overlap      $B --policy overlap --ratio 1"
	"2.5b-dpu-0.5      $B --policy dpu --ratio 0.5"
)
BUDGET=${ZB_MGPU_BUDGET:-360}
for r in "${runs[@]}"; do
	if [ "$SECONDS" -gt "$BUDGET" ]; then
		echo "skipped (over ${BUDGET}s): $r" | tee -a "$LOG"
		continue
	fi
	set -- $r
	name=$1
	shift
	step "run $name: $* --gpus 2"
	timeout 90 $Z run --hw "$HW" --gpus 2 "$@" --steps 4 --warmup 2 --json --db "$DB" \
		>"$OUT/run-$name.json" 2>>"$LOG"
	echo "rc=$?" | tee -a "$LOG"
done

step "summary of the runs"
"$PYTHON" - "$OUT" <<'PY' | tee "$OUT/summary.tsv" | tee -a "$LOG"
import json, sys, glob, os
out = sys.argv[1]
print("run\tpred_ms\tmeas_ms\terr_%\tcomm_pred_ms\tcomm_meas_ms\tcomm_err_%\trank_ms\tdigests_equal")
errs, cerrs = [], []
for f in sorted(glob.glob(os.path.join(out, "run-*.json"))):
    name = os.path.basename(f)[4:-5]
    try:
        j = json.load(open(f))
    except Exception as e:
        print(f"{name}\tunreadable: {e}")
        continue
    p, m = j.get("predicted", {}), j.get("measured", {})
    ps, ms = p.get("step_time_s") or 0, m.get("step_time_s") or 0
    pc = (p.get("busy_s") or {}).get("comm") or 0
    mc = (m.get("busy_s") or {}).get("comm") or 0
    ranks = j.get("ranks", [])
    rank_ms = ",".join("%.1f" % (r["step_time_s"] * 1e3) for r in ranks)
    digests = len({r.get("params_digest") for r in ranks}) == 1 if ranks else None
    e = 100 * (ps - ms) / ms if ms else float("nan")
    ce = 100 * (pc - mc) / mc if mc else float("nan")
    if ms:
        errs.append(abs(e))
    if mc:
        cerrs.append(abs(ce))
    print(f"{name}\t{ps*1e3:.2f}\t{ms*1e3:.2f}\t{e:+.1f}\t{pc*1e3:.2f}\t{mc*1e3:.2f}\t{ce:+.1f}\t{rank_ms}\t{digests}")
if errs:
    print(f"# step MAPE {sum(errs)/len(errs):.1f}% over {len(errs)} runs; comm busy MAPE "
          f"{sum(cerrs)/len(cerrs) if cerrs else float('nan'):.1f}%")
PY

if [ "${ZB_MGPU_DS:-1}" = 1 ]; then
	left=$((530 - SECONDS))
	if [ $left -lt 120 ]; then
		step "DeepSpeed ZeRO-2 offload on 2 GPUs: skipped, ${left}s left"
	else
		step "DeepSpeed ZeRO-2 offload (s2-off) on 2 GPUs, 2.5B shape, timeout ${left}s"
		if ! "$PYTHON" -c 'import deepspeed' >/dev/null 2>&1; then
			pip install --no-index --no-deps --target /tmp/site .whl/*.whl >>"$LOG" 2>&1 ||
				echo "pip install of .whl/*.whl failed" | tee -a "$LOG"
			export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
		fi
		mkdir -p "$OUT/ds"
		timeout $left $Z validate --deepspeed --model gpt-2.5b --seq 2048 --micro-batch 4 --gpus 2 --hw "$HW" \
			--configs s2-off --python "$PYTHON" --timeout $((left - 10)) --ds-steps 8 --log-dir "$OUT/ds" \
			--db "$DB" 2>&1 | tee -a "$LOG"
		echo "rc=${PIPESTATUS[0]}" | tee -a "$LOG"
		# the harness's own lines (per rank) into the log; the directory itself stays here
		grep -hE "^ds_step: (rank|[0-9]+ ranks|step)|^\{\"harness\"" "$OUT"/ds/*.log >>"$LOG" 2>/dev/null
		rm -rf "$OUT/ds"
	fi
fi

# the one-GPU executor after the changes for several (device index, core slices, shard ranges), if time is left
left=$((560 - SECONDS))
if [ $left -ge 40 ]; then
	step "GPU test: the one-GPU executor (timeout ${left}s)"
	ZB_REQUIRE_GPU=1 timeout $left build/tests/gpu/test_executor >>"$OUT/tests.log" 2>&1
	echo "test_executor rc=$?" | tee -a "$OUT/tests.log" "$LOG" >/dev/null
	grep -E "^\[  (PASSED|FAILED) |rc=" "$OUT/tests.log" | tail -3 | tee -a "$LOG"
else
	echo "test_executor skipped: ${left}s left" | tee -a "$LOG"
fi

# the database in one file (a process stopped by a timeout can leave its WAL behind)
"$PYTHON" -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.execute("PRAGMA journal_mode=DELETE"); c.close()' "$DB" 2>>"$LOG"
# keep $OUT to a few files: the runs' JSON live on in the database and summary.tsv
tar -czf "$OUT/runs-json.tgz" -C "$OUT" $(cd "$OUT" && ls run-*.json 2>/dev/null) 2>/dev/null && rm -f "$OUT"/run-*.json
step "done"
ls -la "$OUT" | tee -a "$LOG"
