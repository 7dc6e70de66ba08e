#!/usr/bin/env bash
# What zbench trace costs a training step, on the GPU machine, in ONE device call of at
# most ~6 minutes (issue 10: overhead <= 3 % of step time, 0 dropped records). Binaries
# come built in build/ (zbench, libzbench_inject.so); DeepSpeed from the wheels in .whl/.
# Carry build/zbench, build/libzbench_inject.so and .whl (the whole build/ is ~60 MB, near
# the 64 MiB a call carries). Nothing is compiled here.
#
#   scripts/visit-trace-ovh.sh [torch] [ds]        (default: both, in that order)
#
#   torch  scripts/trace-torch-step.py without NVTX (a ZeRO-Offload-like loop in plain
#          PyTorch: 8 Linear layers, D2H grads, fused CPU AdamW on 16 threads, H2D
#          weights), untraced then traced; analyze finds the steps by the kernel
#          pattern; its step (~87 ms, ~50 ms of it the CPU optimizer on every core) is
#          a sensitive probe of what the /proc sampler takes from an all-core optimizer.
#   ds     DeepSpeed ZeRO-Offload (peers/ds_step.py, config DS_CONFIG = s2-off, shape
#          gpt-2.5b: 2.65 B parameters), untraced and traced in the order U T T U (drift
#          cancels), DS_STEPS (12) steps each (step_ms: the harness's median after its 3
#          warm-up steps); the second pair only when the time left allows it
#          (ZB_BUDGET_S, default 330 s for the whole script). Per pair and as the median
#          of each side: the overhead %. Then analyze of the last traced run: per-step
#          D2H and H2D bytes against what DeepSpeed moves (fp32 gradients down, 4 B a
#          parameter; bf16 parameters up, 2 B a parameter), CPU-optimizer time.
#
# Each traced run's report gives its records, dropped records and the tracer's own cost
# (sampler CPU, record conversion, CUPTI overhead records). ZB_TRACE_FLAGS adds trace
# flags to every traced run (e.g. "--kinds +launches", "--api", "--sample-ms 50"), to
# measure what a kind costs in a later call.
# Writes under $OUT (at most 6 files): visit-trace-ovh.log (the summary), runs.tgz (every
# run's stdout/stderr), torch-plain.analyze.txt, ds-analyze.txt, ds-analyze.json,
# ds-threads.txt (CPU time per thread of the last traced run, the 12 busiest). The
# trace databases stay in /tmp (tens of MB).
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
Z=build/zbench
PY=${PYTHON:-python3}
LOG=$OUT/visit-trace-ovh.log
RUNS=$OUT/runs
mkdir -p "$RUNS"
T0=$(date +%s)
BUDGET=${ZB_BUDGET_S:-330}
FLAGS=${ZB_TRACE_FLAGS:-}
say() { echo "$*" | tee -a "$LOG"; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }
pct() { awk -v u="$1" -v t="$2" 'BEGIN { if (u > 0 && t > 0) printf "%+.2f %%", 100 * (t - u) / u; else print "?" }'; }
median() { tr ' ' '\n' | grep -E '^[0-9.]+$' | sort -n |
	awk '{ v[NR] = $1 } END { if (NR == 0) print "none"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
run_of() { grep -o 'zbench trace: run [0-9]*' "$1" | head -1 | awk '{ print $4 }'; }

torch_part() {
	local db=/tmp/zbench-ovh-torch.db cmd="$PY scripts/trace-torch-step.py --steps ${ZB_TORCH_STEPS:-20}" u t run
	rm -f "$db"
	say "=== torch, no NVTX: untraced, then traced ($(date +%T), $(left) s left)"
	# shellcheck disable=SC2086 # a command line on purpose
	timeout 120 $cmd >"$RUNS/torch-untraced.out" 2>&1
	say "untraced: exit $?"
	# shellcheck disable=SC2086 # flag lists on purpose
	timeout 120 $Z trace --db "$db" $FLAGS -- $cmd >"$RUNS/torch-plain.out" 2>"$RUNS/torch-plain.err"
	say "traced: exit $?"
	grep -E '^zbench (trace|inject)' "$RUNS/torch-plain.err" | tee -a "$LOG"
	u=$(grep -o '"median_step_ms": [0-9.]*' "$RUNS/torch-untraced.out" | awk '{ print $2 }')
	t=$(grep -o '"median_step_ms": [0-9.]*' "$RUNS/torch-plain.out" | awk '{ print $2 }')
	say "torch median step: untraced ${u:-none} ms, traced ${t:-none} ms, overhead $(pct "${u:-0}" "${t:-0}")"
	run=$(run_of "$RUNS/torch-plain.err")
	[ -n "$run" ] || { say "torch: no traced run to analyze"; return 1; }
	$Z analyze "$run" --steps --db "$db" >"$OUT/torch-plain.analyze.txt" 2>&1
	say "torch analyze (no NVTX): $(grep -E '^# [0-9]+ steps found by|^# the whole' "$OUT/torch-plain.analyze.txt")"
	grep -E '^step time|^cpu ' "$OUT/torch-plain.analyze.txt" | tee -a "$LOG"
}

ds_install() { # DeepSpeed importable, from .whl/ into /tmp/site when it is not
	$PY -c 'import deepspeed' >/dev/null 2>&1 && return 0
	if [ -d /tmp/site/deepspeed ]; then # installed by an earlier call on this machine
		export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
		$PY -c 'import deepspeed' >/dev/null 2>&1 && return 0
	fi
	ls .whl/*.whl >/dev/null 2>&1 || { say "error: $PY cannot import deepspeed and .whl/ has no wheels (carry .whl)"; return 1; }
	pip install --no-index --no-deps --target /tmp/site .whl/*.whl >"$RUNS/pip.log" 2>&1 ||
		{ say "error: pip install of .whl/*.whl failed (runs.tgz: pip.log)"; return 1; }
	export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
	$PY -c 'import deepspeed' >>"$RUNS/pip.log" 2>&1 || { say "error: deepspeed not importable"; return 1; }
}
step_ms() { grep '^{"harness": "ds_step"' "$1" | tail -1 | $PY -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["step_ms"])' 2>/dev/null || echo none; }
steps_of() { grep '^{"harness": "ds_step"' "$1" | tail -1 | $PY -c 'import json,sys; print(" ".join("%.0f" % x for x in json.load(sys.stdin)["steps_ms"]))' 2>/dev/null; }
timed_of() { steps_of "$1" | tr ' ' '\n' | tail -n +4 | tr '\n' ' '; } # after the harness's 3 warm-up steps
params_of() { grep '^{"harness": "ds_step"' "$1" | tail -1 | $PY -c 'import json,sys; print(json.load(sys.stdin)["params"])' 2>/dev/null || echo 0; }

# one DeepSpeed process, untraced (u) or traced (t); its wall seconds go to $LAST_S
ds_one() {
	local kind=$1 i=$2 t0 limit
	limit=$(($(left) - 15))
	[ "$limit" -gt 200 ] && limit=200
	t0=$(date +%s)
	if [ "$kind" = u ]; then
		# shellcheck disable=SC2086 # a command line on purpose
		timeout "$limit" $DSCMD >"$RUNS/ds-untraced-$i.out" 2>"$RUNS/ds-untraced-$i.err"
		say "untraced $i: exit $?, $(($(date +%s) - t0)) s, step_ms $(step_ms "$RUNS/ds-untraced-$i.out") (steps: $(steps_of "$RUNS/ds-untraced-$i.out"))"
	else
		# shellcheck disable=SC2086
		timeout "$limit" $Z trace --db "$DSDB" $FLAGS -- $DSCMD >"$RUNS/ds-traced-$i.out" 2>"$RUNS/ds-traced-$i.err"
		say "traced $i: exit $?, $(($(date +%s) - t0)) s, step_ms $(step_ms "$RUNS/ds-traced-$i.out") (steps: $(steps_of "$RUNS/ds-traced-$i.out"))"
		grep -E '^zbench (trace|inject)' "$RUNS/ds-traced-$i.err" | tee -a "$LOG"
	fi
	LAST_S=$(($(date +%s) - t0))
}

ds_part() {
	local cfg=${DS_CONFIG:-s2-off} most=0 us="" ts="" usteps="" tsteps="" u t run p
	DSDB=/tmp/zbench-ovh-ds.db
	DSCMD="$PY peers/ds_step.py --family gpt --layers 32 --hidden 2560 --heads 32 --vocab 50257 --seq 2048"
	DSCMD="$DSCMD --micro-batch 4 --ds-config peers/configs/$cfg.json --nvtx --steps ${DS_STEPS:-12}"
	rm -f "$DSDB"
	say "=== DeepSpeed $cfg gpt-2.5b: untraced / traced, U T T U ($(date +%T), $(left) s left)"
	say "command: $DSCMD; trace flags: ${FLAGS:-(defaults)}"
	ds_install || return 1
	for spec in u1 t1 t2 u2; do
		k=${spec:0:1} i=${spec:1}
		need=$most # a run takes about as long as the longest so far; t2 needs u2 after it
		[ "$spec" = t2 ] && need=$((most * 2))
		if [ "$most" -gt 0 ] && [ "$(left)" -lt $((need + 20)) ]; then
			say "stopping before $spec: $(left) s left, a run takes up to $most s"
			break
		fi
		ds_one "$k" "$i"
		[ "$LAST_S" -gt "$most" ] && most=$LAST_S
		if [ "$k" = u ]; then
			us="$us $(step_ms "$RUNS/ds-untraced-$i.out")" usteps="$usteps $(timed_of "$RUNS/ds-untraced-$i.out")"
		else
			ts="$ts $(step_ms "$RUNS/ds-traced-$i.out")" tsteps="$tsteps $(timed_of "$RUNS/ds-traced-$i.out")"
		fi
	done
	u=$(echo "$us" | median) t=$(echo "$ts" | median)
	say "DeepSpeed step_ms: untraced [$us ] traced [$ts ]"
	say "median: untraced ${u} ms, traced ${t} ms, overhead $(pct "$u" "$t") ($cfg, gpt-2.5b)"
	u=$(echo "$usteps" | median) t=$(echo "$tsteps" | median)
	say "pooled timed steps: untraced $(echo "$usteps" | wc -w) steps, median ${u} ms; traced $(echo "$tsteps" | wc -w) steps, median ${t} ms; overhead $(pct "$u" "$t")"
	run=$(run_of "$RUNS/ds-traced-1.err")
	[ -f "$RUNS/ds-traced-2.err" ] && run=$(run_of "$RUNS/ds-traced-2.err")
	[ -n "$run" ] || { say "no traced DeepSpeed run to analyze"; return 1; }
	$Z analyze "$run" --steps --db "$DSDB" >"$OUT/ds-analyze.txt" 2>&1
	$Z analyze "$run" --json --db "$DSDB" >"$OUT/ds-analyze.json" 2>>"$OUT/ds-analyze.txt"
	sed -n '1,22p' "$OUT/ds-analyze.txt" | tee -a "$LOG"
	p=$(params_of "$RUNS/ds-traced-1.out")
	$PY - "$OUT/ds-analyze.json" "$p" <<'EOF' 2>&1 | tee -a "$LOG"
import json, sys
try:
    a = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit("no analysis to read (%s): see ds-analyze.txt" % e)
m, p = a["median"], int(sys.argv[2])
if p <= 0:
    sys.exit("no parameter count from the harness")
print("bytes per step (median): D2H %.3f GB = %.3f B/param, H2D %.3f GB = %.3f B/param, for %d params;"
      " DeepSpeed moves 4 B/param down (fp32 grads) and 2 B/param up (bf16 params): D2H %.4f x, H2D %.4f x that"
      % (m["d2h_bytes"] / 1e9, m["d2h_bytes"] / p, m["h2d_bytes"] / 1e9, m["h2d_bytes"] / p, p,
         m["d2h_bytes"] / (4 * p), m["h2d_bytes"] / (2 * p)))
print("CPU optimizer %.1f ms/step, step %.1f ms, steps by %s" % (m["cpu_opt_s"] * 1e3, m["step_s"] * 1e3, a.get("found_by", "?")))
EOF
	$PY - "$DSDB" >"$OUT/ds-threads.txt" 2>&1 <<'EOF'
import sqlite3, sys
h = sqlite3.connect(sys.argv[1])
cfg = h.execute("SELECT max(zbConfigId) FROM ZB_THREAD_CPU").fetchone()[0]
cols = [r[1] for r in h.execute("PRAGMA table_info(META_DATA_EXPORT)")]
meta = h.execute("SELECT name, value FROM META_DATA_EXPORT WHERE zbConfigId = ? AND name LIKE 'ZB_%'",
                 (cfg,)).fetchall() if "zbConfigId" in cols else []
cupti = {int(v) for k, v in meta if k == "ZB_CUPTI_THREAD_TID"}
names = {}
try:
    names = dict(h.execute("SELECT t.globalTid, s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId"))
except sqlite3.Error as e:
    print("no thread names:", e)
rows = h.execute("SELECT globalTid, sum(cpuNs), min(start), max(end) FROM ZB_THREAD_CPU WHERE zbConfigId = ?"
                 " GROUP BY globalTid ORDER BY 2 DESC", (cfg,)).fetchall()
total = sum(r[1] for r in rows)
print("trace config %s: %d threads, %.1f s of CPU in all; the 12 busiest:" % (cfg, len(rows), total / 1e9))
for g, ns, s, e in rows[:12]:
    tid = g & 0xFFFFFF
    print("pid %7d tid %7d %-16s %9.1f ms CPU over %6.1f s%s" % (g >> 24, tid, names.get(g, "?"), ns / 1e6,
          (e - s) / 1e9, "   <- CUPTI's worker thread" if tid in cupti else ""))
for k, v in meta:
    print(k, v)
EOF
	grep -E '^(trace config|pid )' "$OUT/ds-threads.txt" | head -7 | tee -a "$LOG"
	grep -E 'CUPTI' "$OUT/ds-threads.txt" | tee -a "$LOG"
}

{
	nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
	echo "cores: $(nproc); $(lscpu | grep 'Model name')"
	$PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
	ls -la build/zbench build/libzbench_inject.so
	$Z --version 2>&1 | head -1
} 2>&1 | tee -a "$LOG"
if [ ! -x "$Z" ] || [ ! -f build/libzbench_inject.so ]; then
	say "error: build/zbench and build/libzbench_inject.so needed (carry build)"
	exit 2
fi
[ $# -gt 0 ] || set -- torch ds
for what in "$@"; do
	case $what in
	torch) torch_part ;;
	ds) ds_part ;;
	*) say "unknown part '$what' (torch, ds)" ;;
	esac
done
say "=== done ($(date +%T), $(($(date +%s) - T0)) s)"
tar -C "$OUT" -czf "$OUT/runs.tgz" runs && rm -rf "$RUNS"
