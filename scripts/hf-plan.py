#!/usr/bin/env python3
"""Write the measurement plan of real DeepSpeed on Hugging Face models (peers/plans/hf-deepspeed.jsonl):
one JSON object per run, what scripts/ds-plan.sh runs on the GPU machine.

    python3 scripts/hf-plan.py [--zbench build/zbench] [--out peers/plans/hf-deepspeed.jsonl]

The split is by model family and regime. FITTING: the two families zbench has been fitted on
before (Llama, GPT-2), across every regime. HELD-OUT: three families that no fit sees (Qwen2 with
its q/k/v biases, GPT-NeoX with its parallel residual and partial rotary, Phi-3 with fused qkv and
gate_up), again across the regimes: bf16 and fp16, ZeRO-2 and ZeRO-3, optimizer and parameter
offload, Twin-Flow 0.3 and 0.7, gas 1 and >= 4, seq 512 to 4096, the Hugging Face guide's ZeRO-3
parameter-offload config with fp16 included. TUNE: the guide's config on Llama 3.2 1B (the
fitting set's gas-1 tutorial run) and what `zbench tune` proposes for it, free and with
--keep-offload. TRACE: one short Kineto trace of a ZeRO-3 parameter-offload step. OVERHEAD: a
run repeated without --ds-counts, so the instrumentation's own cost is measured, not assumed.

Each run has est_s, the seconds its process is expected to take: start-up (Python, torch,
transformers and DeepSpeed imports, engine set-up) + pinned host buffers per parameter + its steps
at zbench's predicted step time (`zbench predict` with the run's files; for the families zbench has
no reader for yet, the Llama of nearly the same size stands in), times a margin per regime (ZeRO-3
parameter offload was measured 1.5-3x slower than predicted). The runs are placed in two device
calls of at most CALL_BUDGET_S each; within a call, runs go in order of "drop" (0: must run,
higher: dropped first when the call's time runs short) and the script skips what no longer fits."""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALL_BUDGET_S = 540
START_S = 24.0          # imports, dist init, deepspeed.initialize of a small model, exit
PINNED_S_PER_BPARAM = 6.0  # pinned optimizer state and parameter buffers, build, first copies
WARMUP, STEPS = 2, 6
MODELS = {  # file, family, zbench stand-in where zbench has no reader for the family yet
    "llama1b": ("llama-3.2-1b", "llama", None),
    "gpt2l": ("gpt2-large", "gpt2", None),
    "qwen05": ("qwen2.5-0.5b", "qwen2", None),
    "qwen15": ("qwen2.5-1.5b", "qwen2", None),
    "pythia1b": ("pythia-1b", "gpt_neox", "--hf-config peers/models/llama-3.2-1b.json"),
    "phi3": ("phi3-mini-16l", "phi3", "--hf-config peers/models/llama-3.2-1b.json --layers 16 --hidden 3072 "
             "--heads 32 --kv-heads 32 --ffn 8192 --vocab 32064"),
}
PARAMS = {"llama1b": 1235814400, "gpt2l": 774030080, "qwen05": 494032768, "qwen15": 1543714304,
          "pythia1b": 1011781632, "phi3": 2009041920}

# name, set, model, config, seq, micro-batch, gas, dtype, grad ckpt, call, drop, what
RUNS = [
    # call 1: in order of drop, then as listed
    ("F01", "fit", "llama1b", "hf-z2-off", 2048, 4, 1, "bf16", "none", 1, 0, "ZeRO-2 optimizer offload"),
    ("F03", "fit", "llama1b", "hf-z3-off", 2048, 4, 1, "bf16", "none", 1, 0, "ZeRO-3 optimizer offload"),
    ("F05", "fit", "llama1b", "hf-z3-tut", 512, 2, 1, "fp16", "none", 1, 0,
     "the HF guide's ZeRO-3 parameter + optimizer offload, fp16; the tune check's input"),
    ("T01", "tune", "llama1b", "hf-z3-tut-tuned-llama1b", 512, 2, 1, "fp16", "none", 1, 0,
     "zbench tune's proposal for F05 (ZeRO-2, optimizer on the GPU; torch_adam)"),
    ("F06", "fit", "llama1b", "hf-z3-tut", 512, 2, 8, "fp16", "none", 1, 0, "F05 at gas 8"),
    ("H01", "held-out", "qwen15", "hf-z2-off", 2048, 4, 1, "bf16", "none", 1, 0, "ZeRO-2 optimizer offload"),
    ("H04", "held-out", "qwen05", "hf-z3-tut", 512, 2, 1, "fp16", "none", 1, 0,
     "the HF guide's ZeRO-3 parameter offload, fp16"),
    ("H05", "held-out", "qwen05", "hf-z3-tut", 512, 2, 8, "fp16", "none", 1, 0, "H04 at gas 8"),
    ("H07", "held-out", "pythia1b", "hf-z2-off", 2048, 4, 1, "bf16", "none", 1, 0, "ZeRO-2 optimizer offload"),
    ("H02", "held-out", "qwen15", "hf-z2-off-tut", 1024, 4, 4, "fp16", "none", 1, 0,
     "the HF guide's ZeRO-2, fp16, gas 4"),
    ("P01", "trace", "qwen05", "hf-z3-tut", 512, 2, 2, "fp16", "none", 1, 1,
     "one profiled step (Kineto trace) of parameter offload, gas 2"),
    ("F02", "fit", "llama1b", "hf-z2-off-tut", 2048, 4, 4, "bf16", "none", 1, 1,
     "the HF guide's ZeRO-2 (overlap_comm, auto bucket), gas 4"),
    # call 2
    ("F07", "fit", "gpt2l", "hf-z2-off", 1024, 8, 1, "bf16", "none", 2, 0,
     "GPT-2 vocabulary at micro-batch 8: fp32 logits"),
    ("F08", "fit", "gpt2l", "hf-z3-tut", 512, 4, 4, "fp16", "none", 2, 0, "parameter offload fp16, gas 4"),
    ("H03", "held-out", "qwen15", "hf-z3-tf70", 2048, 4, 1, "bf16", "none", 2, 0, "Twin-Flow 0.7"),
    ("H08", "held-out", "pythia1b", "hf-z3-tf30", 2048, 4, 4, "bf16", "gpu", 2, 0,
     "Twin-Flow 0.3 with checkpointing, gas 4"),
    ("H09", "held-out", "pythia1b", "hf-z3-tut", 512, 4, 1, "fp16", "none", 2, 0, "parameter offload fp16"),
    ("H12", "held-out", "phi3", "hf-z3-tut", 512, 2, 4, "fp16", "none", 2, 0, "parameter offload fp16, gas 4"),
    ("H06", "held-out", "qwen05", "hf-z3-off", 4096, 2, 1, "bf16", "gpu", 2, 0,
     "ZeRO-3 optimizer offload, seq 4096, checkpointing"),
    ("F04", "fit", "llama1b", "hf-z3-tf30", 2048, 4, 1, "bf16", "none", 2, 1, "Twin-Flow 0.3"),
    ("F09", "fit", "gpt2l", "hf-z3-tf70", 1024, 4, 1, "bf16", "gpu", 2, 1, "Twin-Flow 0.7, HF gradient checkpointing"),
    ("H11", "held-out", "phi3", "hf-z2-off-tut", 2048, 2, 1, "bf16", "none", 2, 1, "the HF guide's ZeRO-2"),
    ("H13", "held-out", "phi3", "hf-z3-tf30", 4096, 1, 1, "bf16", "gpu", 2, 1,
     "Twin-Flow 0.3, seq 4096, checkpointing"),
    ("O01", "overhead", "qwen05", "hf-z3-tut", 512, 2, 1, "fp16", "none", 2, 1,
     "H04 without --ds-counts: the instrumentation's cost"),
    ("F10", "fit", "llama1b", "hf-z3-tut", 4096, 1, 1, "bf16", "gpu", 2, 2,
     "parameter offload bf16 at seq 4096 with checkpointing"),
    ("H10", "held-out", "pythia1b", "hf-z3-off", 1024, 8, 1, "bf16", "none", 2, 2, "ZeRO-3 optimizer offload"),
    ("H14", "held-out", "qwen15", "hf-z3-tut", 1024, 2, 1, "bf16", "none", 2, 2, "parameter offload bf16"),
    ("T02", "tune", "llama1b", "hf-z3-tut-tuned-keep-llama1b", 512, 2, 1, "fp16", "none", 2, 3,
     "zbench tune --keep-offload's proposal for F05 (ZeRO-2 optimizer offload, overlap_comm)"),
]
MARGIN = {"hf-z3-tut": 2.0}  # parameter offload: measured 1.5-3x the prediction


def predict_ms(zbench, model, cfg, seq, mb, gas, dtype, ckpt):
    file, _, standin = MODELS[model]
    shape = standin or f"--hf-config peers/models/{file}.json"
    cmd = [zbench, "predict", "--no-db", "--json", "--hw", "hw/h200-machine-deepspeed.json", "--ds-config",
           f"peers/configs/{cfg}.json", "--seq", str(seq), "--micro-batch", str(mb), "--gas", str(gas),
           f"--{dtype}"] + shape.split() + (["--ckpt", ckpt] if ckpt != "none" else [])
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"hf-plan: {' '.join(cmd)}: {p.stderr.strip().splitlines()[-1]}")
    r = json.loads(p.stdout)
    return 1e3 * r["step_time_s"]


def args_of(name, sset, model, cfg, seq, mb, gas, dtype, ckpt):
    a = ["--tag", name, "--hf-config", f"peers/models/{MODELS[model][0]}.json", "--ds-config",
         f"peers/configs/{cfg}.json", "--seq", str(seq), "--micro-batch", str(mb), "--gas", str(gas),
         "--dtype", dtype, "--steps", str(STEPS if sset != "trace" else 3), "--warmup",
         str(WARMUP)]
    if ckpt != "none":
        a += ["--grad-ckpt", ckpt]
    if sset != "overhead":
        a.append("--ds-counts")
    if sset == "trace":
        a += ["--profile-steps", "1", "--profile-out", "$OUT/" + name + "-trace.json.gz"]
    return a


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--zbench", default=os.path.join(ROOT, "build", "zbench"))
    p.add_argument("--out", default=os.path.join(ROOT, "peers", "plans", "hf-deepspeed.jsonl"))
    a = p.parse_args()
    rows, per_call = [], {1: 0.0, 2: 0.0}
    for name, sset, model, cfg, seq, mb, gas, dtype, ckpt, call, drop, what in RUNS:
        step = predict_ms(a.zbench, model, cfg, seq, mb, gas, dtype, ckpt) * MARGIN.get(cfg, 1.25)
        steps = STEPS if sset != "trace" else 3 + 1
        est = START_S + PINNED_S_PER_BPARAM * PARAMS[model] / 1e9 + (steps + WARMUP) * step / 1e3
        rows.append({"name": name, "set": sset, "family": MODELS[model][1], "model": f"peers/models/{MODELS[model][0]}.json",
                     "config": cfg, "seq": seq, "micro_batch": mb, "gas": gas, "dtype": dtype, "grad_ckpt": ckpt,
                     "params": PARAMS[model], "predicted_step_ms": round(step / MARGIN.get(cfg, 1.25), 1),
                     "est_s": round(est), "call": call, "drop": drop, "what": what,
                     "args": args_of(name, sset, model, cfg, seq, mb, gas, dtype, ckpt)})
        per_call[call] += est
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    for call, total in per_call.items():
        mine = [r for r in rows if r["call"] == call]
        fits, used = [], 0
        for r in sorted(mine, key=lambda r: r["drop"]):
            if used + r["est_s"] <= CALL_BUDGET_S:
                fits.append(r["name"])
                used += r["est_s"]
        print(f"call {call}: {len(mine)} runs, {total:.0f} s expected; within {CALL_BUDGET_S} s: {len(fits)} "
              f"({used} s), dropped first: {' '.join(r['name'] for r in mine if r['name'] not in fits) or 'none'}",
              file=sys.stderr)


if __name__ == "__main__":
    main()
