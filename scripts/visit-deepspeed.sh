#!/usr/bin/env bash
# Measure real DeepSpeed on the GPU machine: one process of peers/ds_step.py per
# (shape, configuration), each under a timeout, so one crash or hang costs one row.
#   scripts/visit-deepspeed.sh [CONFIG ...]     (default: every peers/configs/*.json)
# CONFIG is a name in peers/configs (s2-off) or "torch" (plain PyTorch, fused AdamW).
# With build/zbench present (carry build/), each shape goes through
# `zbench validate --deepspeed`, which also predicts every configuration and stores
# measured and predicted side by side in $OUT/zbench.db; without it the harness is
# run directly. Each process of the 2.5B shape takes 40-90 s: under the device's
# 10-minute command limit, give about five configurations per call.
# Environment:
#   DS_SHAPES   shapes to run, names below (default "gpt-2.5b")
#   DS_STEPS    steps per process (default 8; the first 3 are warm-up)
#   DS_TIMEOUT  seconds per process (default 300)
#   DS_EXTRA    extra ds_step.py flags, direct mode only, e.g. "--nvtx" or "--phase-sync"
#   DS_DIRECT   1: run the harness directly even when build/zbench exists
#   PYTHON      interpreter with PyTorch (default python3)
# Writes under $OUT: <shape>/ds-<config>.log (each process's whole output),
# ds-results.jsonl (the JSON line of each run that finished), visit-deepspeed.log,
# and zbench.db (zbench mode). Results of direct mode go into a database later with
#   zbench validate --deepspeed --from $OUT/ds-results.jsonl <shape flags>
# DeepSpeed is installed from the wheels in .whl/ into /tmp/site when the
# interpreter cannot import it (the GPU machine has no DeepSpeed, pydantic, hjson).
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
PYTHON=${PYTHON:-python3}
LOG=$OUT/visit-deepspeed.log
JSONL=$OUT/ds-results.jsonl
STEPS=${DS_STEPS:-8}
TIMEOUT=${DS_TIMEOUT:-300}
say() { echo "$*" | tee -a "$LOG"; }

# A shape as zbench flags (zbench mode) and as ds_step.py flags (direct mode): the
# same model. gpt-2.5b is the shape of data/deepspeed-h200-2026-11-30.tsv;
# llama-3.2-3b has GQA (24/8 heads), SwiGLU and a tied head.
zbench_flags() {
	case $1 in
	gpt-2.5b) echo "--model gpt-2.5b --seq 2048 --micro-batch 4" ;;
	gpt2-large) echo "--model gpt2-large --seq 1024 --micro-batch 8" ;;
	llama-3.2-3b) echo "--hf-config peers/models/llama-3.2-3b.json --seq 2048 --micro-batch 2" ;;
	*) return 1 ;;
	esac
}
harness_flags() {
	case $1 in
	gpt-2.5b) echo "--family gpt --layers 32 --hidden 2560 --heads 32 --vocab 50257 --seq 2048 --micro-batch 4" ;;
	gpt2-large) echo "--family gpt --layers 36 --hidden 1280 --heads 20 --vocab 50257 --seq 1024 --micro-batch 8" ;;
	llama-3.2-3b) echo "--family llama --layers 28 --hidden 3072 --heads 24 --kv-heads 8 --ffn 8192 --vocab 128256 --tied-head --seq 2048 --micro-batch 2" ;;
	*) return 1 ;;
	esac
}

if ! "$PYTHON" -c 'import deepspeed' >/dev/null 2>&1; then
	if ! ls .whl/*.whl >/dev/null 2>&1; then
		say "error: $PYTHON cannot import deepspeed and there are no wheels in .whl/"
		exit 1
	fi
	say "installing the wheels of .whl/ into /tmp/site"
	pip install --no-index --no-deps --target /tmp/site .whl/*.whl >>"$LOG" 2>&1 ||
		{ say "error: pip install of .whl/*.whl failed (see $LOG)"; exit 1; }
	export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
	"$PYTHON" -c 'import deepspeed' >>"$LOG" 2>&1 ||
		{ say "error: deepspeed still not importable after installing the wheels"; exit 1; }
fi

configs=("$@")
if [ ${#configs[@]} -eq 0 ]; then
	for f in peers/configs/*.json; do configs+=("$(basename "$f" .json)"); done
fi
{
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
	echo "cores: $(nproc); $(lscpu | grep 'Model name')"
	"$PYTHON" -c 'import torch, deepspeed; print("torch", torch.__version__, "deepspeed", deepspeed.__version__)' 2>&1 | tail -1
} | tee -a "$LOG"

# One configuration, harness run directly; its JSON line appended to $JSONL.
direct() {
	local shape=$1 cfg=$2 flags which log rc line
	flags=$(harness_flags "$shape")
	if [ "$cfg" = torch ]; then
		which=--no-deepspeed
	elif [ -f "peers/configs/$cfg.json" ]; then
		which="--ds-config peers/configs/$cfg.json"
	else
		say "error: no configuration peers/configs/$cfg.json"; return 1
	fi
	log=$OUT/$shape/ds-$cfg.log
	say "=== $shape $cfg ($(date -u +%T))"
	# shellcheck disable=SC2086 # flags are word lists on purpose
	timeout "$TIMEOUT" "$PYTHON" peers/ds_step.py $flags --steps "$STEPS" $which ${DS_EXTRA:-} >"$log" 2>&1
	rc=$?
	line=$(grep '^{"harness": "ds_step"' "$log" | tail -1)
	if [ $rc -ne 0 ] || [ -z "$line" ]; then
		say "failed: rc=$rc$([ $rc -eq 124 ] && echo ' (timeout)'); last lines:"
		tail -5 "$log" | tee -a "$LOG"
		return 1
	fi
	echo "$line" >>"$JSONL"
	say "$(echo "$line" | "$PYTHON" -c 'import json,sys; r=json.load(sys.stdin); print("step %.0f ms, gpu peak %.1f GiB, reserved %.1f GiB, host rss %.1f GiB, steps %s" % (r["step_ms"], r["gpu_peak_GiB"], r["gpu_reserved_GiB"], r["host_rss_GiB"], ",".join("%.0f" % t for t in r["steps_ms"])))')"
}

failed=0
for shape in ${DS_SHAPES:-gpt-2.5b}; do
	zflags=$(zbench_flags "$shape") || { say "error: unknown shape '$shape'"; failed=1; continue; }
	mkdir -p "$OUT/$shape"
	if [ -x build/zbench ] && [ "${DS_DIRECT:-0}" != 1 ]; then
		say "=== $shape: zbench validate --deepspeed --configs $(IFS=,; echo "${configs[*]}") ($(date -u +%T))"
		# shellcheck disable=SC2086
		build/zbench validate --deepspeed $zflags --configs "$(IFS=,; echo "${configs[*]}")" --python "$PYTHON" \
			--timeout "$TIMEOUT" --ds-steps "$STEPS" --log-dir "$OUT/$shape" --db "$OUT/zbench.db" 2>&1 | tee -a "$LOG"
		[ "${PIPESTATUS[0]}" -eq 0 ] || failed=1
		cat "$OUT/$shape"/ds-*.log 2>/dev/null | grep '^{"harness": "ds_step"' >>"$JSONL"
	else
		for cfg in "${configs[@]}"; do
			direct "$shape" "$cfg" || failed=1
		done
	fi
done
exit $failed
