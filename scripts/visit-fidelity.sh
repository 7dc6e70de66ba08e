#!/usr/bin/env bash
# GPU visit for the fidelity branch (issue 12, parts: fused attention, --link-rate,
# run --json). About 5 minutes on the H200 machine. Needs build/ from the development
# machine (carried: build/zbench, build/tests, build/lib). Writes under $OUT:
#   fidelity.log              everything, and a summary at the end
#   test-flash.log            tests/gpu/test_flash_attn: fwd O, lse, dQ dK dV vs a double
#                             reference (causal, GQA, d 32/64/80/96/128), flash TFLOP/s
#   test-exec-fidelity.log    tests/gpu/test_exec_fidelity: executor runs with flash (GPT with
#                             recompute, GQA Llama shape; precision check) and with copies
#                             paced to 8 GB/s (every copy >= bytes/rate, achieved rate)
#   bench-flash.json          zbench bench --filter flash (2.5B attention shape, d 128 GQA)
#   run-*.json                zbench run --json: 2.5B no offload flash vs eager; gpt2-large
#                             overlap at native, 25 and 12 GB/s (achieved rates in
#                             measured.link); 2.5B dpu ratio 1 at native and 25 GB/s (the
#                             "faster link, slower step?" case of issue 12)
#   summary.tsv               one line per run: predicted and measured step, error, TFLOP/s
#   zbench.db                 the runs, stored
set -u
OUT=${OUT:-/tmp/zbench-out}
mkdir -p "$OUT"
Z=build/zbench
DB=$OUT/zbench.db
LOG=$OUT/fidelity.log
step() { echo "=== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv,noheader | tee -a "$LOG"

step "flash attention test (correctness + kernel TFLOP/s)"
ZB_REQUIRE_GPU=1 timeout 150 build/tests/gpu/test_flash_attn >"$OUT/test-flash.log" 2>&1
echo "rc=$?" | tee -a "$LOG"
grep -E "^# |OK|FAILED|ERROR|error" "$OUT/test-flash.log" | tee -a "$LOG"

step "executor with flash attention and paced copies"
ZB_REQUIRE_GPU=1 timeout 90 build/tests/gpu/test_exec_fidelity >"$OUT/test-exec-fidelity.log" 2>&1
echo "rc=$?" | tee -a "$LOG"
grep -E "^# |OK|FAILED|ERROR|error" "$OUT/test-exec-fidelity.log" | tee -a "$LOG"

step "bench flash"
timeout 90 $Z bench --filter flash --json >"$OUT/bench-flash.json" 2>>"$LOG"
echo "rc=$?" | tee -a "$LOG"

# name, then zbench run arguments
runs=(
	"2.5b-none-flash   --model gpt-2.5b --policy none --seq 2048 --micro-batch 4 --attention flash"
	"2.5b-none-eager   --model gpt-2.5b --policy none --seq 2048 --micro-batch 4 --attention eager"
	"large-ovl-native  --model gpt2-large --policy overlap --ratio 1 --seq 1024 --micro-batch 8"
	"large-ovl-25      --model gpt2-large --policy overlap --ratio 1 --seq 1024 --micro-batch 8 --link-rate 25"
	"large-ovl-12      --model gpt2-large --policy overlap --ratio 1 --seq 1024 --micro-batch 8 --link-rate 12"
	"2.5b-dpu-native   --model gpt-2.5b --policy dpu --ratio 1 --seq 2048 --micro-batch 4"
	"2.5b-dpu-25       --model gpt-2.5b --policy dpu --ratio 1 --seq 2048 --micro-batch 4 --link-rate 25"
)
BUDGET=${ZB_FIDELITY_BUDGET:-280} # seconds for everything up to here; later runs are skipped
for r in "${runs[@]}"; do
	if [ "$SECONDS" -gt "$BUDGET" ]; then
		echo "skipped (over ${BUDGET}s): $r" | tee -a "$LOG"
		continue
	fi
	set -- $r
	name=$1
	shift
	step "run $name: $*"
	timeout 60 $Z run "$@" --steps 3 --warmup 1 --json --db "$DB" >"$OUT/run-$name.json" 2>>"$LOG"
	echo "rc=$?" | tee -a "$LOG"
done

step "summary"
python3 - "$OUT" <<'PY' | tee "$OUT/summary.tsv" | tee -a "$LOG"
import json, sys, glob, os
out = sys.argv[1]
print("run\tattention\tlink_GBps\tpred_ms\tmeas_ms\terr_%\tmeas_TFLOPs\td2h_native\td2h_achieved\th2d_native\th2d_achieved")
for f in sorted(glob.glob(os.path.join(out, "run-*.json"))):
    name = os.path.basename(f)[4:-5]
    try:
        j = json.load(open(f))
    except Exception as e:
        print(f"{name}\tunreadable: {e}")
        continue
    p, m = j.get("predicted", {}), j.get("measured", {})
    link = m.get("link", {})
    def g(d, k):
        v = link.get(d, {}).get(k)
        return f"{v/1e9:.2f}" if isinstance(v, (int, float)) else "-"
    lr = j.get("link_rate_Bps")
    print(f"{name}\t{j.get('attention')}\t{lr/1e9 if lr else '-'}\t{p.get('step_time_s', 0)*1e3:.2f}\t"
          f"{m.get('step_time_s', 0)*1e3:.2f}\t{100*j.get('error', {}).get('step_time', 0):+.1f}\t"
          f"{m.get('tflops_per_gpu', 0):.1f}\t{g('pcie_d2h','native_Bps')}\t{g('pcie_d2h','achieved_Bps')}\t"
          f"{g('pcie_h2d','native_Bps')}\t{g('pcie_h2d','achieved_Bps')}")
    a = j.get("attention_tasks", {})
    if a.get("measured_tflops"):
        print(f"#   {name}: attention tasks {a['tasks_per_step']}/step, measured {a['measured_s_per_step']*1e3:.2f} ms "
              f"({a['measured_tflops']:.1f} TFLOP/s = {a['measured_tflops']/850:.3f} of 850), predicted "
              f"{a['predicted_s_per_step']*1e3:.2f} ms")
try:
    def walk(x):
        if isinstance(x, dict):
            if "fwd_bwd_tflops" in x:
                yield x
            for v in x.values():
                yield from walk(v)
        elif isinstance(x, list):
            for v in x:
                yield from walk(v)
    for r in walk(json.load(open(os.path.join(out, "bench-flash.json")))):
        # h200 preset: bf16_flops 850e12; flash_efficiency for a hardware file
        print(f"# flash d{r['head_dim']} h{r['heads']} kv{r['kv_heads']}: fwd {r['fwd_tflops']:.1f} bwd "
              f"{r['bwd_tflops']:.1f} fwd+bwd {r['fwd_bwd_tflops']:.1f} TFLOP/s = flash_efficiency "
              f"{r['fwd_bwd_tflops'] / 850:.3f} of 850")
except Exception as e:
    print(f"# bench-flash.json: {e}")
PY
step "done"
