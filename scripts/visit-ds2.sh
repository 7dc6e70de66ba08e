#!/usr/bin/env bash
# One GPU call (at most ~230 s; nvidia-h200-x2, one GPU used) for issue 11: where
# ZeRO-2 offload's optimizer phase goes on each shape. DeepSpeed s2-off through
# peers/ds_step.py --step-split (peers/ds_split.py: host time of CPU Adam, the norm's
# per-tensor .item()s, the wait for the last gradient copies, the bit16 update, the rest of
# step() with the fp32 -> bf16 cast; the backward's bucket flushes; the cast probed alone),
# gpt2-large first, then Llama-3.2-3B (the shape whose optimizer phase per parameter is
# 6-15 % above the 2.5 B shape's on the H200), then the 2.5 B shape if time is left (a
# 2.5 B or Llama process takes ~2 minutes, most of it building the model and pinning):
# all on the same host, so the shapes compare with each other (its CPU differs from the
# single-H200 machine's).
#   OUT=/tmp/o scripts/visit-ds2.sh     (carries .whl/ like scripts/visit-deepspeed.sh)
# Writes $OUT/ds-results.jsonl, the per-run logs and $OUT/host.txt; no run goes past 232 s
# of the call (a shape is skipped with less than 60 s left, the 2.5 B one with less than 130).
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
export OUT DS_DIRECT=1 DS_STEPS=${DS_STEPS:-6} DS_EXTRA=--step-split
# the wheels go into /tmp/site once (visit-deepspeed.sh installs them when the import fails)
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
{
	lscpu | grep -E 'Model name|^CPU\(s\)|NUMA node\(s\)|Thread|Socket'
	grep -E 'MemTotal' /proc/meminfo
	cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
	nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
} >"$OUT/host.txt" 2>&1
rc=0
start=$SECONDS
for shape in gpt2-large llama-3.2-3b gpt-2.5b; do
	left=$((232 - (SECONDS - start)))
	need=60
	[ "$shape" = gpt-2.5b ] && need=130
	if [ $left -lt $need ]; then
		echo "skipped $shape: $((SECONDS - start)) s gone" | tee -a "$OUT/visit-deepspeed.log"
		rc=1
		continue
	fi
	# never past ~232 s of the call
	DS_TIMEOUT=$left DS_SHAPES=$shape scripts/visit-deepspeed.sh s2-off || rc=1
done
echo "visit-ds2: $((SECONDS - start)) s" | tee -a "$OUT/visit-deepspeed.log"
exit $rc
