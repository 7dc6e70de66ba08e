#!/usr/bin/env bash
# One GPU call (at most ~560 s, single H200) for issue 11's ranking of the 2.5 B table:
# DeepSpeed's s3-tf50 against s3-off-param and s2-off against s2-off-ovl (overlap_comm), all four
# in one session with peers/ds_step.py --step-split, 8 steps each; s3-tf50 again at the end,
# to show the session's drift (data/deepspeed-h200-2026-12-01-split-order.jsonl).
#   OUT=/tmp/o scripts/visit-ds4.sh     (carries .whl/ like scripts/visit-deepspeed.sh)
DS_EXTRA=--step-split DS_SHAPES=gpt-2.5b DS_CONFIGS="s3-tf50 s3-off-param s2-off-ovl s2-off s3-tf50" \
	DS_BUDGET=560 DS_NEED=110 NAME=visit-ds4 exec "$(dirname "$0")/visit-dsrun.sh"
