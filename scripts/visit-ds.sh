#!/usr/bin/env bash
# One GPU call (about 4 minutes) for issue 11's shape generalization: is the
# optimizer phase of ZeRO-2 offload per parameter a property of the shape or of
# the harness? The 2.5 B table (data/deepspeed-h200-2026-11-30.tsv) was measured
# with another script than peers/ds_step.py, which measured gpt2-large and
# Llama-3.2-3B; ds_step's opt phase of stage 2 offload is ~444 ms per billion
# parameters on both of those, the 2.5 B table's ~355. This runs the 2.5 B stage-2
# configurations through ds_step.py, then gpt2-large s2-none and s2-off with
# --phase-sync (GPU-synchronized phases: how long the GPU's forward and backward
# really take on the hidden-1280 shape, which zbench predicts ~20 % short).
#   OUT=/tmp/o scripts/visit-ds.sh     (carries .whl/ like scripts/visit-deepspeed.sh)
# Writes $OUT/ds-results.jsonl and the per-run logs (see visit-deepspeed.sh).
set -u
export DS_DIRECT=1 DS_STEPS=${DS_STEPS:-7} DS_TIMEOUT=${DS_TIMEOUT:-150}
rc=0
DS_SHAPES=gpt-2.5b scripts/visit-deepspeed.sh s2-off s2-none || rc=1
DS_SHAPES=gpt2-large DS_EXTRA=--phase-sync scripts/visit-deepspeed.sh s2-none s2-off || rc=1
exit $rc
