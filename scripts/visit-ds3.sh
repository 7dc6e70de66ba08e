#!/usr/bin/env bash
# One GPU call (at most ~195 s, single H200) for issue 11's tune margin: where the ZeRO-3
# optimizer phase goes in the tuned 2.5 B config (stage 3, offload_param, sub_group_size 1e9,
# overlap_comm) and in its input s3-off (stage 3, offload_optimizer, sub_group_size 1e8).
# zbench predicts the tuned step's optimizer phase 170 ms short and s3-off's 141 ms long
# (measured 1021 / 2209 ms, 2026-11-30): peers/ds_step.py --step-split times, per step,
# stage3.py's _optimizer_step (CPU Adam), unscale_and_clip_grads, and
# _reassign_or_swap_out_partitioned_parameters (s3-off: the fp32 -> bf16 copy_ into the GPU
# partition through a pageable temporary; tuned: into the pinned host partition), the norms,
# _partition_all_parameters and _post_step; both on the same host, one after the other.
#   OUT=/tmp/o scripts/visit-ds3.sh     (carries .whl/ like scripts/visit-deepspeed.sh)
# Writes $OUT/ds-results.jsonl, the per-run logs and $OUT/host.txt; a run is skipped when
# less than 85 s of the call's 195 s are left.
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
export OUT DS_DIRECT=1 DS_STEPS=${DS_STEPS:-6} DS_EXTRA=--step-split DS_SHAPES=gpt-2.5b
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
{
	lscpu | grep -E 'Model name|^CPU\(s\)|NUMA node\(s\)|Thread|Socket'
	grep -E 'MemTotal' /proc/meminfo
	nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
} >"$OUT/host.txt" 2>&1
rc=0
start=$SECONDS
for cfg in tuned-gpt25b-s3-off s3-off; do
	left=$((195 - (SECONDS - start)))
	if [ $left -lt 85 ]; then
		echo "skipped $cfg: $((SECONDS - start)) s gone" | tee -a "$OUT/visit-deepspeed.log"
		rc=1
		continue
	fi
	DS_TIMEOUT=$left scripts/visit-deepspeed.sh "$cfg" || rc=1
done
echo "visit-ds3: $((SECONDS - start)) s" | tee -a "$OUT/visit-deepspeed.log"
exit $rc
