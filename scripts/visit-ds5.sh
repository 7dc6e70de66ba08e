#!/usr/bin/env bash
# The 2.5 B table of issue 11 (data/deepspeed-h200-2026-11-30.tsv) measured again, every
# configuration in ONE session of the same host, as the table was (no --step-split: its
# synchronised gradient flush slows stage 2 offload by ~200 ms), 8 steps each, median of 4-8.
# The 2026-11-30 table was measured across sessions; its s3-tf50 median sits 341 ms above its
# own profiled step, so DeepSpeed's order of s3-tf50 and s3-off-param is measured again here.
# The table takes ~650 s, more than one device call: give each call a part,
#   DS_CONFIGS="s2-none s2-off s3-off s3-tf50 s3-off-param s3-none" DS_BUDGET=450 scripts/visit-batch.sh ds5
#   DS_CONFIGS="s2-off-ovl s3-tf30" DS_BUDGET=200 scripts/visit-batch.sh ds5 fid
# on a warm machine (the second call within 30 s of the first). DS_SHAPES picks another shape
# (scripts/visit-deepspeed.sh's names), e.g. DS_SHAPES=llama-3.2-3b DS_CONFIGS="s2-off s3-tf50". A configuration is skipped
# when less than 95 s of DS_BUDGET are left. Writes $OUT/ds-results.jsonl, the per-run logs
# and $OUT/host.txt. Then, offline:
#   zbench validate --deepspeed --from $OUT/ds-results.jsonl --model gpt-2.5b --seq 2048 \
#       --micro-batch 4 --hw hw/h200-machine-deepspeed.json --no-db
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
export OUT DS_DIRECT=1 DS_STEPS=${DS_STEPS:-8} DS_SHAPES=${DS_SHAPES:-gpt-2.5b}
unset DS_EXTRA
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
CONFIGS=${DS_CONFIGS:-s2-none s2-off s3-off s3-tf50 s3-off-param s3-none s2-off-ovl s3-tf30}
BUDGET=${DS_BUDGET:-560}
{
	lscpu | grep -E 'Model name|^CPU\(s\)|NUMA node\(s\)|Thread|Socket'
	grep -E 'MemTotal' /proc/meminfo
	cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
	nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
} >"$OUT/host.txt" 2>&1
rc=0
start=$SECONDS
for cfg in $CONFIGS; do
	left=$((BUDGET - (SECONDS - start)))
	if [ $left -lt 95 ]; then
		echo "skipped $cfg: $((SECONDS - start)) s gone" | tee -a "$OUT/visit-deepspeed.log"
		rc=1
		continue
	fi
	DS_TIMEOUT=$left scripts/visit-deepspeed.sh "$cfg" || rc=1
done
echo "visit-ds5: $((SECONDS - start)) s" | tee -a "$OUT/visit-deepspeed.log"
exit $rc
