#!/usr/bin/env bash
# One GPU call (at most ~232 s) for issue 11: where ZeRO-2 offload's optimizer phase goes on
# each shape. DeepSpeed s2-off through peers/ds_step.py --step-split (peers/ds_split.py: host
# time of CPU Adam, the norm's per-tensor .item()s, the wait for the last gradient copies, the
# bit16 update, the rest of step() with the fp32 -> bf16 cast; the backward's bucket flushes;
# the cast probed alone): gpt2-large, Llama-3.2-3B, then the 2.5 B shape if time is left, all
# on the same host so the shapes compare (data/deepspeed-h200-2026-12-01-split.jsonl).
#   OUT=/tmp/o scripts/visit-ds2.sh     (carries .whl/ like scripts/visit-deepspeed.sh)
DS_EXTRA=--step-split DS_SHAPES="gpt2-large llama-3.2-3b gpt-2.5b" DS_CONFIGS=s2-off DS_STEPS=${DS_STEPS:-6} \
	DS_BUDGET=232 DS_NEED=60 NAME=visit-ds2 exec "$(dirname "$0")/visit-dsrun.sh"
