#!/usr/bin/env bash
# GPU visit for the flash branch (issue 12: fused attention at FlashAttention-2 speed).
# One call, about 150 s on one H200 (GPU 0 of the machine). Needs build/ from the
# development machine (carried: build/zbench, build/lib, build/tests). Compares the
# new mma.sync kernels (ZB_FLASH_IMPL=mma, the default) with the old wmma ones.
# Writes under $OUT:
#   flash.log                 everything, with a summary at the end
#   test-flash-mma.log        tests/gpu/test_flash_attn with the mma kernels: O, lse, dQ, dK,
#                             dV against a double reference (causal, GQA, d 32/64/80/96/128,
#                             partial tiles, padded strides), then fwd/bwd TFLOP/s
#   test-flash-wmma.log       the same with the old kernels
#   bench-flash-*.json        zbench bench --filter flash (2.5B shape, d128 GQA 32/8): mma with
#                             the default tiles, mma-f16 (ZB_FLASH_FWD_ROWS=16), mma-f32b64
#                             (ZB_FLASH_FWD_ROWS=32 ZB_FLASH_BWD_ROWS=64), wmma
#   test-flash-mma-{f16,f32b64}.log  test_flash_attn (no bench) with those other tiles
#   run-2.5b-{flash,eager}.json   zbench run --json, gpt-2.5b, no offload, seq 2048,
#                             micro-batch 4: the step time and model TFLOP/s
#   test-exec-fidelity.log    executor runs with flash attention (precision check)
#   sanitizer-{memcheck,racecheck}.log  compute-sanitizer on test_flash_attn (mma, no bench)
#   zbench.db                 the runs, stored
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
Z=build/zbench
T=build/tests/gpu/test_flash_attn
LOG=$OUT/flash.log
BUDGET=${ZB_FLASH_BUDGET:-140} # seconds: optional steps start only below this
step() { echo "=== $* (t=${SECONDS}s, $(date +%T))" | tee -a "$LOG"; }
left() { [ "$SECONDS" -lt "$1" ] || { echo "skipped (t=${SECONDS}s >= $1 s): $2" | tee -a "$LOG"; return 1; }; }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader 2>&1 | tee -a "$LOG"
git log --oneline -1 2>/dev/null | tee -a "$LOG"

step "test_flash_attn, mma kernels"
ZB_FLASH_IMPL=mma ZB_REQUIRE_GPU=1 timeout 40 $T >"$OUT/test-flash-mma.log" 2>&1
echo "rc=$?" | tee -a "$LOG"
grep -E "^# |OK|FAILED|ERROR|error" "$OUT/test-flash-mma.log" | tee -a "$LOG"

# name, then the environment: the default tiles, the other forward tile at head dim 80,
# the other forward and backward tiles at head dim 128, the old kernels
benches=(
	"mma      ZB_FLASH_IMPL=mma"
	"mma-f16  ZB_FLASH_IMPL=mma ZB_FLASH_FWD_ROWS=16"
	"mma-f32b64 ZB_FLASH_IMPL=mma ZB_FLASH_FWD_ROWS=32 ZB_FLASH_BWD_ROWS=64"
	"wmma     ZB_FLASH_IMPL=wmma"
)
for b in "${benches[@]}"; do
	set -- $b
	name=$1
	shift
	step "bench flash, $name ($*)"
	env "$@" timeout 20 $Z bench --filter flash --json >"$OUT/bench-flash-$name.json" 2>>"$LOG"
	echo "rc=$?" | tee -a "$LOG"
done

for att in flash eager; do
	left 110 "run $att" || continue
	step "run gpt-2.5b none, attention $att (mma kernels)"
	timeout 40 $Z run --model gpt-2.5b --policy none --seq 2048 --micro-batch 4 --attention $att \
		--steps 4 --warmup 1 --json --db "$OUT/zbench.db" >"$OUT/run-2.5b-$att.json" 2>>"$LOG"
	echo "rc=$?" | tee -a "$LOG"
done

if left 120 "test_flash_attn wmma"; then
	step "test_flash_attn, wmma kernels"
	ZB_FLASH_IMPL=wmma ZB_REQUIRE_GPU=1 timeout 25 $T >"$OUT/test-flash-wmma.log" 2>&1
	echo "rc=$?" | tee -a "$LOG"
	grep -E "^# |OK|FAILED|ERROR|error" "$OUT/test-flash-wmma.log" | tee -a "$LOG"
fi

for v in "f16 ZB_FLASH_FWD_ROWS=16" "f32b64 ZB_FLASH_FWD_ROWS=32 ZB_FLASH_BWD_ROWS=64"; do
	set -- $v
	name=$1
	shift
	left 115 "test_flash_attn $*" || continue
	step "test_flash_attn, mma kernels, $* (no bench)"
	env "$@" ZB_FLASH_IMPL=mma ZB_FLASH_TEST_NO_BENCH=1 ZB_REQUIRE_GPU=1 timeout 20 $T \
		>"$OUT/test-flash-mma-$name.log" 2>&1
	echo "rc=$?" | tee -a "$LOG"
	grep -E "^# |OK|FAILED|ERROR|error" "$OUT/test-flash-mma-$name.log" | tee -a "$LOG"
done

if left 115 "test_exec_fidelity"; then
	step "test_exec_fidelity (executor with flash attention)"
	ZB_REQUIRE_GPU=1 timeout 30 build/tests/gpu/test_exec_fidelity >"$OUT/test-exec-fidelity.log" 2>&1
	echo "rc=$?" | tee -a "$LOG"
	grep -E "^# |OK|FAILED|ERROR|error" "$OUT/test-exec-fidelity.log" | tee -a "$LOG"
fi

CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
	[ -x "$CS" ] || { echo "no compute-sanitizer" | tee -a "$LOG"; break; }
	left $BUDGET "$tool" || continue
	lim=$((BUDGET + 8 - SECONDS))
	step "compute-sanitizer $tool test_flash_attn (mma, no bench; ${lim}s at most)"
	ZB_FLASH_IMPL=mma ZB_FLASH_TEST_NO_BENCH=1 ZB_REQUIRE_GPU=1 timeout $lim "$CS" --tool $tool \
		--error-exitcode 99 $T >"$OUT/sanitizer-$tool.log" 2>&1
	echo "rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.log" | tail -1)" | tee -a "$LOG"
	grep -E "^# |OK|FAILED|Invalid|Race|hazard" "$OUT/sanitizer-$tool.log" | head -20 | tee -a "$LOG"
done

step "summary"
python3 - "$OUT" <<'PY' 2>&1 | tee -a "$LOG"
import json, os, sys
out = sys.argv[1]
for impl in ("mma", "mma-f16", "mma-f32b64", "wmma"):
    try:
        j = json.load(open(os.path.join(out, f"bench-flash-{impl}.json")))
    except Exception as e:
        print(f"bench {impl}: unreadable ({e})")
        continue
    def shapes(o):
        if isinstance(o, dict):
            if "shapes" in o and isinstance(o["shapes"], list) and o["shapes"] and "fwd_tflops" in o["shapes"][0]:
                return o["shapes"]
            for v in o.values():
                r = shapes(v)
                if r:
                    return r
        if isinstance(o, list):
            for v in o:
                r = shapes(v)
                if r:
                    return r
        return None
    for s in shapes(j) or []:
        print(f"bench {impl}: b{s['batch']} s{s['seq']} h{s['heads']} kv{s['kv_heads']} d{s['head_dim']}: "
              f"fwd {s['fwd_tflops']:.1f} bwd {s['bwd_tflops']:.1f} fwd+bwd {s['fwd_bwd_tflops']:.1f} TFLOP/s")
for att in ("flash", "eager"):
    try:
        j = json.load(open(os.path.join(out, f"run-2.5b-{att}.json")))
    except Exception as e:
        print(f"run {att}: unreadable ({e})")
        continue
    m, p = j.get("measured", {}), j.get("predicted", {})
    a = j.get("attention_tasks")
    print(f"run gpt-2.5b none {att}: measured {1e3 * m.get('step_time_s', 0):.1f} ms/step, "
          f"{m.get('tflops_per_gpu', 0):.1f} model TFLOP/s; predicted {1e3 * p.get('step_time_s', 0):.1f} ms; "
          f"steps {[round(1e3 * x, 1) for x in m.get('steps_s', [])]}")
    if a:
        print(f"  attention tasks: {json.dumps(a)[:600]}")
PY
echo "visit-flash done (t=${SECONDS}s)" | tee -a "$LOG"
