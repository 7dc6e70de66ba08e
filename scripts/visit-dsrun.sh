#!/usr/bin/env bash
# Real DeepSpeed on the GPU machine within ONE device call: each configuration of DS_CONFIGS
# for each shape of DS_SHAPES, one peers/ds_step.py process each (scripts/visit-deepspeed.sh,
# direct mode: JSON lines, no database), with the host described in $OUT/host.txt. A run is
# skipped when less than DS_NEED seconds of the call's DS_BUDGET are left, and no run goes past
# DS_BUDGET. The visit-ds*.sh scripts are named settings of this one.
# Environment (besides visit-deepspeed.sh's):
#   DS_CONFIGS  configurations in peers/configs (default: the eight of the 2.5 B table)
#   DS_SHAPES   shapes, visit-deepspeed.sh's names (default gpt-2.5b)
#   DS_BUDGET   seconds for the whole call (default 560)
#   DS_NEED     seconds a run needs to start (default 95: a 2.5 B offload process takes 50-100 s)
#   DS_STEPS    steps per process (default 8; the first 3 are warm-up)
#   DS_EXTRA    extra ds_step.py flags, e.g. --step-split (default none)
#   NAME        the name in the log's last line (default visit-dsrun)
# Writes $OUT/ds-results.jsonl, the per-run logs and $OUT/host.txt. Then, offline:
#   zbench validate --deepspeed --from $OUT/ds-results.jsonl --model gpt-2.5b --seq 2048 \
#       --micro-batch 4 --hw hw/h200-machine-deepspeed.json --no-db
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
export OUT DS_DIRECT=1 DS_STEPS=${DS_STEPS:-8} DS_EXTRA=${DS_EXTRA:-}
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
CONFIGS=${DS_CONFIGS:-s2-none s2-off s3-off s3-tf50 s3-off-param s3-none s2-off-ovl s3-tf30}
SHAPES=${DS_SHAPES:-gpt-2.5b}
BUDGET=${DS_BUDGET:-560}
NEED=${DS_NEED:-95}
{
	lscpu | grep -E 'Model name|^CPU\(s\)|NUMA node\(s\)|Thread|Socket'
	grep -E 'MemTotal' /proc/meminfo
	cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
	nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
} >"$OUT/host.txt" 2>&1
rc=0
start=$SECONDS
for shape in $SHAPES; do
	for cfg in $CONFIGS; do
		left=$((BUDGET - (SECONDS - start)))
		if [ $left -lt "$NEED" ]; then
			echo "skipped $shape $cfg: $((SECONDS - start)) s gone" | tee -a "$OUT/visit-deepspeed.log"
			rc=1
			continue
		fi
		DS_TIMEOUT=$left DS_SHAPES=$shape scripts/visit-deepspeed.sh "$cfg" || rc=1
	done
done
echo "${NAME:-visit-dsrun}: $((SECONDS - start)) s" | tee -a "$OUT/visit-deepspeed.log"
exit $rc
