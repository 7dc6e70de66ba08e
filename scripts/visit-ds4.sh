#!/usr/bin/env bash
# One GPU call (at most ~560 s, single H200) for issue 11's ranking of the 2.5 B table:
# DeepSpeed's s3-tf50 (1962 ms) against s3-off-param (1829 ms) and s2-off against s2-off-ovl
# (overlap_comm), all four in ONE session with peers/ds_step.py --step-split, 8 steps each.
# zbench ranks s3-tf50 below s3-off-param; the table's s3-tf50 median is 341 ms above its
# own profiled step's phases (1621 ms) and its Twin-Flow/offload ratio differs from the other
# shapes' (BENCHMARKS.md, branch ds4), so the order has to be measured again in one session
# before a model term is fitted to it. The split also says where overlap_comm's gain is
# (s2-off-ovl has no split yet; the model puts its gain in the backward, the 2026-11-30
# phases put it in step()). s3-tf50 runs again at the end when time is left, to show the
# session's drift (validate keeps one row per configuration name: read the repeat from the jsonl).
#   OUT=/tmp/o scripts/visit-ds4.sh     (carries .whl/ like scripts/visit-deepspeed.sh)
# Writes $OUT/ds-results.jsonl, the per-run logs and $OUT/host.txt; a run is skipped when
# less than 110 s of the call's 560 s are left. Then, offline:
#   zbench validate --deepspeed --from $OUT/ds-results.jsonl --model gpt-2.5b --seq 2048 \
#       --micro-batch 4 --hw hw/h200-machine-deepspeed.json --no-db
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
export OUT DS_DIRECT=1 DS_STEPS=${DS_STEPS:-8} DS_EXTRA=--step-split DS_SHAPES=gpt-2.5b
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
{
	lscpu | grep -E 'Model name|^CPU\(s\)|NUMA node\(s\)|Thread|Socket'
	grep -E 'MemTotal' /proc/meminfo
	cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
	nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
} >"$OUT/host.txt" 2>&1
rc=0
start=$SECONDS
for cfg in s3-tf50 s3-off-param s2-off-ovl s2-off s3-tf50; do
	left=$((560 - (SECONDS - start)))
	if [ $left -lt 110 ]; then
		echo "skipped $cfg: $((SECONDS - start)) s gone" | tee -a "$OUT/visit-deepspeed.log"
		rc=1
		continue
	fi
	DS_TIMEOUT=$left scripts/visit-deepspeed.sh "$cfg" || rc=1
done
echo "visit-ds4: $((SECONDS - start)) s" | tee -a "$OUT/visit-deepspeed.log"
exit $rc
