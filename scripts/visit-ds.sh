#!/usr/bin/env bash
# One GPU call (about 4 minutes) for issue 11's shape generalization. ZeRO-2
# offload's optimizer phase costs ~444 ms per billion parameters on gpt2-large and
# Llama-3.2-3B (peers/ds_step.py) but ~355 on the 2.5 B shape (the table
# data/deepspeed-h200-2026-11-30.tsv; ds_step's own 2.5 B s2-off step, 1545 ms, agrees
# with the table's total), while stage 3's is the same on all three. This runs the
# 2.5 B stage-2 configurations through ds_step.py (their phases), then gpt2-large
# s2-none and s2-off with --phase-sync (GPU-synchronized phases: the GPU's own
# forward and backward on the hidden-1280 shape).
#   OUT=/tmp/o scripts/visit-ds.sh     (carries .whl/ like scripts/visit-deepspeed.sh)
# Writes $OUT/ds-results.jsonl and the per-run logs (see visit-deepspeed.sh).
set -u
export DS_DIRECT=1 DS_STEPS=${DS_STEPS:-7} DS_TIMEOUT=${DS_TIMEOUT:-150}
rc=0
DS_SHAPES=gpt-2.5b scripts/visit-deepspeed.sh s2-off s2-none || rc=1
DS_SHAPES=gpt2-large DS_EXTRA=--phase-sync scripts/visit-deepspeed.sh s2-none s2-off || rc=1
exit $rc
