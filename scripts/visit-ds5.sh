#!/usr/bin/env bash
# The 2.5 B table of issue 11 (data/deepspeed-h200-2026-11-30.tsv) measured again, every
# configuration in one session of the same host, as the table was (no --step-split: its
# synchronised gradient flush slows stage 2 offload), 8 steps each, median of 4-8
# (data/deepspeed-h200-2026-12-01-table.jsonl). The table takes ~650 s, more than one device
# call: give each call a part, on a warm machine (the second within 30 s of the first):
#   DS_CONFIGS="s2-none s2-off s3-off s3-tf50 s3-off-param s3-none" DS_BUDGET=545 scripts/visit-batch.sh ds5
#   DS_CONFIGS="s2-off-ovl s3-tf30" DS_BUDGET=205 scripts/visit-batch.sh fid ds5
# DS_SHAPES picks another shape, e.g. DS_SHAPES=llama-3.2-3b DS_CONFIGS="s2-off s3-tf50"
# (data/deepspeed-h200-2026-12-01-llama.jsonl). scripts/visit-dsrun.sh has the settings.
DS_EXTRA= NAME=visit-ds5 exec "$(dirname "$0")/visit-dsrun.sh"
