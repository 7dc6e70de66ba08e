#!/usr/bin/env bash
# One GPU call (at most ~195 s, single H200) for issue 11's tune margin: where the ZeRO-3
# optimizer phase goes in the tuned 2.5 B config (stage 3, offload_param, sub_group_size 1e9,
# overlap_comm) and in its input s3-off (stage 3, offload_optimizer, sub_group_size 1e8).
# peers/ds_step.py --step-split times, per step, stage3.py's _optimizer_step (CPU Adam),
# unscale_and_clip_grads and _reassign_or_swap_out_partitioned_parameters (s3-off: the fp32 ->
# bf16 copy_ into the GPU partition through a pageable temporary; tuned: into the pinned host
# partition), the norms, _partition_all_parameters and _post_step; both on the same host
# (data/deepspeed-h200-2026-12-01-split-s3.jsonl).
#   OUT=/tmp/o scripts/visit-ds3.sh     (carries .whl/ like scripts/visit-deepspeed.sh)
DS_EXTRA=--step-split DS_SHAPES=gpt-2.5b DS_CONFIGS="tuned-gpt25b-s3-off s3-off" DS_STEPS=${DS_STEPS:-6} \
	DS_BUDGET=195 DS_NEED=85 NAME=visit-ds3 exec "$(dirname "$0")/visit-dsrun.sh"
