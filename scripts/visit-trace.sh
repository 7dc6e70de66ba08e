#!/usr/bin/env bash
# What to run on the GPU machine for zbench trace / analyze (issue 10). Binaries come
# built from the development machine in build/ (zbench, libzbench_inject.so, the
# tests); nothing is compiled here. Everything lands in $OUT: visit-trace.log (the
# summary), trace.db (every traced run), and one log per step.
#
#   scripts/visit-trace.sh [tests] [torch] [overhead] [overhead-ds] [cmd -- COMMAND ARGS...]
#
#   tests     the GPU test of a traced child (tests/gpu/test_trace_foreign) and the
#             CPU-side tests of tracing (tests/test_foreign, tests/test_nvtx_steps: the
#             NVTX filter's cost per call on this host)
#   torch     trace scripts/trace-torch-step.py (ZeRO-Offload-like loop in PyTorch)
#             with NVTX ranges and without; analyze both (NVTX steps; pattern steps)
#   overhead  the same script untraced and traced, alternating, ZB_PAIRS (3) pairs:
#             median step time of each (the script's own CUDA-synchronized timing)
#   overhead-ds  DeepSpeed (peers/ds_step.py --nvtx, DS_CONFIG, default s2-off, shape
#             DS_SHAPE gpt2-large or gpt-2.5b) untraced and traced in alternation,
#             ZB_PAIRS (2) pairs of DS_STEPS (8) steps: the harness's step_ms (median
#             after warm-up) of each run, the median of each side and the overhead %;
#             the traced runs take ZB_TRACE_FLAGS (e.g. "--api" or "--nvtx all" to
#             measure what those cost). Then analyze of the last traced run, text and
#             --json, in $OUT. The trace database stays on the machine
#             (/tmp/zbench-trace-ds.db: it outgrows what $OUT brings back). DeepSpeed
#             comes from the wheels in .whl/ as in scripts/visit-deepspeed.sh.
#   cmd -- C  trace an arbitrary command (e.g. DeepSpeed: cmd -- python3 peers/...)
#             and analyze it; with ZB_UNTRACED=1 also run it untraced first and keep
#             both outputs (lines "ZBSTEP <i> <ms>" are summarized when present)
# Environment: OUT (default /tmp/zbench-out), ZB_STEPS (torch steps, 30), ZB_PAIRS,
# DS_CONFIG, DS_SHAPE, DS_STEPS, ZB_TRACE_FLAGS (overhead-ds).
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
Z=build/zbench
DB=$OUT/trace.db
LOG=$OUT/visit-trace.log
STEPS=${ZB_STEPS:-30}
PY=${PYTHON:-python3}
step() { echo "=== $* ($(date +%T))" | tee -a "$LOG"; }
median_of() { # median of the ZBSTEP times in a log, leaving out the first two steps
	awk '$1 == "ZBSTEP" && $2 >= 2 { print $3 }' "$1" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR == 0) print "none"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
traced() { # name, then the command: trace it, analyze it (table, steps, json)
	local name=$1
	shift
	timeout ${ZB_TIMEOUT:-900} $Z trace --db "$DB" -- "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
	echo "$name: exit $?; $(grep '^zbench trace' "$OUT/$name.err" | tr '\n' ' ')" | tee -a "$LOG"
	grep -E "zbench inject|not traced" "$OUT/$name.err" | head -5 | tee -a "$LOG"
	local run
	run=$(grep -o 'zbench trace: run [0-9]*' "$OUT/$name.err" | head -1 | awk '{ print $4 }')
	$Z analyze $run --steps --db "$DB" >"$OUT/$name.analyze.txt" 2>&1
	$Z analyze $run --json --db "$DB" >"$OUT/$name.analyze.json" 2>>"$OUT/$name.analyze.txt"
	$Z analyze $run --steps --no-nvtx --db "$DB" >"$OUT/$name.analyze-pattern.txt" 2>&1
	sed -n '1,25p' "$OUT/$name.analyze.txt" | tee -a "$LOG"
	grep -E "steps found by" "$OUT/$name.analyze-pattern.txt" | sed 's/^/pattern: /' | tee -a "$LOG"
	grep -h ZBSUMMARY "$OUT/$name.out" | tee -a "$LOG"
}
ds_flags() { # a shape as ds_step.py flags (the same as scripts/visit-deepspeed.sh)
	case $1 in
	gpt2-large) echo "--family gpt --layers 36 --hidden 1280 --heads 20 --vocab 50257 --seq 1024 --micro-batch 8" ;;
	gpt-2.5b) echo "--family gpt --layers 32 --hidden 2560 --heads 32 --vocab 50257 --seq 2048 --micro-batch 4" ;;
	*) return 1 ;;
	esac
}
ds_install() { # DeepSpeed importable, from .whl/ into /tmp/site when it is not
	$PY -c 'import deepspeed' >/dev/null 2>&1 && return 0
	ls .whl/*.whl >/dev/null 2>&1 || { echo "error: $PY cannot import deepspeed and .whl/ has no wheels" | tee -a "$LOG"; return 1; }
	echo "installing the wheels of .whl/ into /tmp/site" | tee -a "$LOG"
	pip install --no-index --no-deps --target /tmp/site .whl/*.whl >>"$OUT/pip.log" 2>&1 ||
		{ echo "error: pip install of .whl/*.whl failed (see pip.log)" | tee -a "$LOG"; return 1; }
	export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
	$PY -c 'import deepspeed' >>"$OUT/pip.log" 2>&1 || { echo "error: deepspeed not importable" | tee -a "$LOG"; return 1; }
}
step_ms() { # the harness's step_ms from its JSON line (the last line of stdout)
	grep '^{"harness": "ds_step"' "$1" | tail -1 | $PY -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["step_ms"])' 2>/dev/null || echo none
}
median_list() { tr ' ' '\n' | grep -v '^$' | grep -v none | sort -n |
	awk '{ v[NR] = $1 } END { if (NR == 0) print "none"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
pct() { awk -v u="$1" -v t="$2" 'BEGIN { if (u > 0 && t > 0) printf "%.2f %%", 100 * (t - u) / u; else print "?" }'; }
overhead_ds() {
	local cfg=${DS_CONFIG:-s2-off} shape=${DS_SHAPE:-gpt2-large} flags ddb=/tmp/zbench-trace-ds.db us="" ts="" u t run
	flags=$(ds_flags "$shape") || { echo "error: unknown DS_SHAPE '$shape'" | tee -a "$LOG"; return 1; }
	ds_install || return 1
	rm -f "$ddb"
	# shellcheck disable=SC2086 # flag lists on purpose
	local cmd="$PY peers/ds_step.py $flags --ds-config peers/configs/$cfg.json --nvtx --steps ${DS_STEPS:-8}"
	echo "command: $cmd; trace flags: ${ZB_TRACE_FLAGS:-(defaults)}" | tee -a "$LOG"
	for i in $(seq 1 ${ZB_PAIRS:-2}); do
		timeout ${ZB_TIMEOUT:-300} $cmd >"$OUT/ds-untraced-$i.out" 2>"$OUT/ds-untraced-$i.err"
		echo "untraced $i: exit $?" >>"$LOG"
		# shellcheck disable=SC2086
		timeout ${ZB_TIMEOUT:-300} $Z trace --db "$ddb" ${ZB_TRACE_FLAGS:-} -- $cmd \
			>"$OUT/ds-traced-$i.out" 2>"$OUT/ds-traced-$i.err"
		echo "traced $i: exit $?" >>"$LOG"
		u=$(step_ms "$OUT/ds-untraced-$i.out")
		t=$(step_ms "$OUT/ds-traced-$i.out")
		us="$us $u" ts="$ts $t"
		echo "pair $i: untraced ${u} ms, traced ${t} ms, overhead $(pct "$u" "$t")" | tee -a "$LOG"
		grep -E '^zbench (trace|inject)' "$OUT/ds-traced-$i.err" | tee -a "$LOG"
	done
	u=$(echo "$us" | median_list) t=$(echo "$ts" | median_list)
	echo "median over the pairs: untraced ${u} ms, traced ${t} ms, overhead $(pct "$u" "$t") ($cfg, $shape)" | tee -a "$LOG"
	run=$(grep -o 'zbench trace: run [0-9]*' "$OUT/ds-traced-${ZB_PAIRS:-2}.err" | head -1 | awk '{ print $4 }')
	[ -n "$run" ] || { echo "no traced run to analyze" | tee -a "$LOG"; return 1; }
	$Z analyze "$run" --steps --db "$ddb" >"$OUT/ds-analyze.txt" 2>&1
	$Z analyze "$run" --json --db "$ddb" >"$OUT/ds-analyze.json" 2>>"$OUT/ds-analyze.txt"
	sed -n '1,30p' "$OUT/ds-analyze.txt" | tee -a "$LOG"
	ls -la "$ddb" | tee -a "$LOG"
}
{
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
	echo "cores: $(nproc); $(lscpu | grep 'Model name')"
	$PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
	ls -la build/libzbench_inject.so
} 2>&1 | tee -a "$LOG"
while [ $# -gt 0 ]; do
	what=$1
	shift
	case $what in
	tests)
		step "tests"
		ZBENCH=$Z ZB_REQUIRE_GPU=1 timeout 300 tests/run.sh build/tests/gpu/test_trace_foreign build/tests/test_foreign \
			build/tests/test_nvtx_steps >"$OUT/tests.log" 2>&1
		grep -E "not ok|ERROR|Failure|median step|dropped|NVTX push|stopped the command|^tests:" "$OUT/tests.log" | tee -a "$LOG"
		;;
	torch)
		step "torch, NVTX ranges"
		traced torch-nvtx $PY scripts/trace-torch-step.py --steps "$STEPS" --nvtx
		step "torch, no NVTX"
		traced torch-plain $PY scripts/trace-torch-step.py --steps "$STEPS"
		;;
	overhead)
		step "overhead: untraced / traced pairs"
		for i in $(seq 1 ${ZB_PAIRS:-3}); do
			$PY scripts/trace-torch-step.py --steps "$STEPS" >"$OUT/ovh-untraced-$i.out" 2>&1
			timeout 600 $Z trace --db "$DB" -- $PY scripts/trace-torch-step.py --steps "$STEPS" \
				>"$OUT/ovh-traced-$i.out" 2>"$OUT/ovh-traced-$i.err"
			u=$(median_of "$OUT/ovh-untraced-$i.out")
			t=$(median_of "$OUT/ovh-traced-$i.out")
			echo "pair $i: untraced median ${u} ms, traced median ${t} ms, overhead" \
				"$(awk -v u="$u" -v t="$t" 'BEGIN { if (u > 0) printf "%.2f %%", 100 * (t - u) / u; else print "?" }')" |
				tee -a "$LOG"
			grep '^zbench trace' "$OUT/ovh-traced-$i.err" | tee -a "$LOG"
		done
		;;
	overhead-ds)
		step "overhead on DeepSpeed: untraced / traced pairs"
		overhead_ds
		;;
	cmd)
		[ "${1:-}" = "--" ] && shift
		[ $# -gt 0 ] || { echo "cmd needs a command: cmd -- COMMAND ARGS..." | tee -a "$LOG"; exit 2; }
		if [ "${ZB_UNTRACED:-0}" = 1 ]; then
			step "untraced: $*"
			start=$(date +%s.%N)
			timeout ${ZB_TIMEOUT:-900} "$@" >"$OUT/cmd-untraced.out" 2>&1
			echo "untraced: exit $?, $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f s", e - s }')," \
				"median ZBSTEP $(median_of "$OUT/cmd-untraced.out") ms" | tee -a "$LOG"
		fi
		step "traced: $*"
		start=$(date +%s.%N)
		traced cmd "$@"
		echo "traced wall $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f s", e - s }')," \
			"median ZBSTEP $(median_of "$OUT/cmd.out") ms" | tee -a "$LOG"
		break
		;;
	*)
		echo "unknown step '$what' (tests, torch, overhead, overhead-ds, cmd -- COMMAND)" | tee -a "$LOG"
		exit 2
		;;
	esac
done
step "done"
