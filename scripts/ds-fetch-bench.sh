#!/usr/bin/env bash
# DeepSpeed ZeRO-3's host paths timed on the GPU machine (peers/ds_fetch_bench.py): the
# unit costs hook_s, fetch_s, z3_grad_s and flush_s of the "deepspeed" profile, ~3 minutes
# on the GPU machine. DeepSpeed comes from the wheels in .whl/ (docs/gpu-suite.md says how they
# are built) when the interpreter cannot import it.
# Writes $OUT/ds-fetch-bench.jsonl (one line per case, the last {"costs": ...}) and
# $OUT/ds-fetch-bench.log. Then, offline: put the costs into hw/h200-machine-deepspeed.json
# (their "source" entries say "measured by peers/ds_fetch_bench.py" with the date).
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
PYTHON=${PYTHON:-python3}
LOG=$OUT/ds-fetch-bench.log
if ! "$PYTHON" -c 'import deepspeed' >/dev/null 2>&1; then
	pip install --no-index --no-deps --target /tmp/site .whl/*.whl >>"$LOG" 2>&1 ||
		{ echo "error: pip install of .whl/*.whl failed (see $LOG)"; exit 1; }
	export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
timeout "${DS_TIMEOUT:-540}" "$PYTHON" peers/ds_fetch_bench.py --out "$OUT/ds-fetch-bench.jsonl" >>"$LOG" 2>&1
rc=$?
tail -3 "$LOG"
exit $rc
