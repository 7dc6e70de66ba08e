#!/usr/bin/env bash
# Real DeepSpeed on Hugging Face models on the GPU machine: the runs of a plan
# (peers/plans/hf-deepspeed.jsonl, written by scripts/hf-plan.py) that belong to one device
# call, one peers/ds_step.py process each under its own timeout, within the call's time budget.
#   scripts/ds-plan.sh [PLAN] [CALL]      (default: peers/plans/hf-deepspeed.jsonl 1)
# CALL is the plan's "call" number, or "all". Runs go in the plan's order of "drop" (0 first;
# higher drops first when time runs short): a run starts only when its est_s x DS_MARGIN still
# fits in what is left of DS_BUDGET, and is stopped at the budget's end or after 4 x est_s,
# whichever comes first. Environment:
#   DS_BUDGET  seconds for the whole call (default 540: the device's 600 s less the set-up)
#   DS_MARGIN  how much longer than est_s a run may turn out (default 1.2)
#   DS_RUNS    only these run names ("F05 T01"), any call
#   DS_EXTRA   flags added to every run (a check on a host without a GPU: "--device cpu")
#   PYTHON     interpreter with PyTorch and transformers (default python3)
# Writes under $OUT (six files: the device returns at most eight, 16 MiB each): ds-results.jsonl
# (each finished run's JSON line, its "tag" the run's name), runs.log (each process's whole
# output, one after the other under a "===== name" line), <name>-trace.json.gz (runs with
# --profile-steps), plan-status.tsv (name, set, status, seconds, est_s, step_ms), host.txt
# (CPU, memory, GPU, versions), ds-plan.log. Compare offline with
#   zbench validate --deepspeed --from $OUT/ds-results.jsonl --hf-config <model> --configs <config> ...
# DeepSpeed comes from the wheels in .whl/ (installed into /tmp/site when the interpreter
# cannot import it); its CPU Adam op is JIT-built once into TORCH_EXTENSIONS_DIR
# (/tmp/torch-extensions), before the first run, so no run's time holds the build.
set -u
OUT=${OUT:-/tmp/zbench-out}
PLAN=${1:-peers/plans/hf-deepspeed.jsonl}
CALL=${2:-1}
PYTHON=${PYTHON:-python3}
BUDGET=${DS_BUDGET:-540}
MARGIN=${DS_MARGIN:-1.2}
mkdir -p "$OUT" /tmp/hf-runs
LOG=$OUT/ds-plan.log
RUNLOG=$OUT/runs.log
JSONL=$OUT/ds-results.jsonl
STATUS=$OUT/plan-status.tsv
start=$SECONDS
say() { echo "[$((SECONDS - start)) s] $*" | tee -a "$LOG"; }

[ -f "$PLAN" ] || { say "error: no plan $PLAN"; exit 1; }
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
if ! "$PYTHON" -c 'import deepspeed' >/dev/null 2>&1; then
	ls .whl/*.whl >/dev/null 2>&1 || { say "error: $PYTHON cannot import deepspeed and .whl/ has no wheels"; exit 1; }
	say "installing the wheels of .whl/ into /tmp/site"
	"$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
		.whl/*.whl >>"$LOG" 2>&1 ||
		{ say "error: pip install of .whl/*.whl failed (see $LOG)"; exit 1; }
fi
export TORCH_EXTENSIONS_DIR=/tmp/torch-extensions
export TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_NO_ADVISORY_WARNINGS=1 PYTHONUNBUFFERED=1
{
	lscpu | grep -E 'Model name|^CPU\(s\)|NUMA node\(s\)|Thread|Socket'
	grep -E 'MemTotal|MemAvailable|HugePages_Total' /proc/meminfo
	echo "thp: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
	nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
	"$PYTHON" -c 'import sys, torch, transformers, deepspeed; print("python", sys.version.split()[0], "torch", torch.__version__,
"cuda", torch.version.cuda, "transformers", transformers.__version__, "deepspeed", deepspeed.__version__)' 2>&1 | tail -1
	"$PYTHON" -c 'import accelerate; print("accelerate", accelerate.__version__)' 2>&1 | tail -1
} >"$OUT/host.txt" 2>&1
cat "$OUT/host.txt" >>"$LOG"
t0=$SECONDS
"$PYTHON" -c 'from deepspeed.ops.op_builder import CPUAdamBuilder; CPUAdamBuilder().load()' >>"$LOG" 2>&1 ||
	say "warning: the CPU Adam build failed (see $LOG): offload runs will fail"
say "CPU Adam op ready in $((SECONDS - t0)) s"

# the plan's runs of this call, ordered by drop: name set est_s args (tab-separated, args last)
runs=$("$PYTHON" - "$PLAN" "$CALL" "${DS_RUNS:-}" <<'EOF'
import json, sys
plan, call, only = sys.argv[1], sys.argv[2], sys.argv[3].split()
rows = [json.loads(l) for l in open(plan) if l.strip()]
if only:
    rows = [r for r in rows if r["name"] in only]
else:
    rows = [r for r in rows if call == "all" or str(r["call"]) == call]
for r in sorted(rows, key=lambda r: (r["drop"], rows.index(r))):
    print("\t".join([r["name"], r["set"], str(r["est_s"]), " ".join(r["args"])]))
EOF
) || { say "error: cannot read the plan $PLAN"; exit 1; }
[ -n "$runs" ] || { say "error: no runs for call '$CALL' in $PLAN"; exit 1; }
[ -f "$STATUS" ] || printf 'name\tset\tstatus\tseconds\test_s\tstep_ms\n' >"$STATUS"

# one dry run first (no GPU work, ~10 s): a missing package or a bad file stops the call here
# instead of failing every run after its start-up
first=$(echo "$runs" | head -1 | cut -f4)
first=${first//\$OUT/$OUT}
# shellcheck disable=SC2086
if ! "$PYTHON" peers/ds_step.py $first --dry-run ${DS_EXTRA:-} >"/tmp/hf-runs/dry-run.log" 2>&1; then
	say "error: the dry run of the call's first run failed; stopping. Its last lines:"
	tail -5 /tmp/hf-runs/dry-run.log | cut -c1-300 | tee -a "$LOG"
	exit 1
fi
say "dry run ok"

rc=0
while IFS=$'\t' read -r name set est args; do
	left=$((BUDGET - (SECONDS - start)))
	need=$(awk -v e="$est" -v m="$MARGIN" 'BEGIN { printf "%d", e * m + 0.5 }')
	if [ "$left" -lt "$need" ]; then
		say "skipped $name ($set): needs ~$need s, $left s left"
		printf '%s\t%s\tskipped\t0\t%s\t\n' "$name" "$set" "$est" >>"$STATUS"
		rc=1
		continue
	fi
	limit=$((4 * est < left ? 4 * est : left))
	args="${args//\$OUT/$OUT} ${DS_EXTRA:-}"
	say "=== $name ($set, ~$est s, limit $limit s): $args"
	t0=$SECONDS
	# shellcheck disable=SC2086 # the plan's arguments are a word list
	timeout --kill-after=10 "$limit" "$PYTHON" peers/ds_step.py $args >"/tmp/hf-runs/$name.log" 2>&1
	code=$?
	took=$((SECONDS - t0))
	{ echo "===== $name rc=$code ${took}s"; cat "/tmp/hf-runs/$name.log"; } >>"$RUNLOG"
	line=$(grep '^{"harness": "ds_step"' "/tmp/hf-runs/$name.log" | tail -1)
	if [ $code -ne 0 ] || [ -z "$line" ]; then
		why=failed
		[ $code -eq 124 ] || [ $code -eq 137 ] && why=timeout
		say "$why: $name rc=$code after $took s; last lines:"
		grep -v '^\[20' "/tmp/hf-runs/$name.log" | tail -4 | cut -c1-300 | tee -a "$LOG"
		printf '%s\t%s\t%s\t%s\t%s\t\n' "$name" "$set" "$why" "$took" "$est" >>"$STATUS"
		rc=1
		continue
	fi
	echo "$line" >>"$JSONL"
	summary=$(echo "$line" | "$PYTHON" -c 'import json, sys; r = json.load(sys.stdin); c = r.get("ds_counts", {})
print("%.1f\tstep %.0f ms (%s), gpu %.1f GiB, host %.1f GiB, fetches %s, skipped %s" % (r["step_ms"], r["step_ms"],
      " ".join("%.0f" % t for t in r["steps_ms"]), r["gpu_peak_GiB"], r["host_rss_GiB"],
      c.get("fetch_fwd_calls", 0) + c.get("fetch_bwd_calls", 0), r.get("skipped_steps")))')
	say "ok: $name in $took s: ${summary#*$'\t'}"
	printf '%s\t%s\tok\t%s\t%s\t%s\n' "$name" "$set" "$took" "$est" "${summary%%$'\t'*}" >>"$STATUS"
done <<<"$runs"
say "ds-plan call $CALL: $((SECONDS - start)) s, $(grep -c $'\tok\t' "$STATUS") ok in $STATUS"
exit $rc
