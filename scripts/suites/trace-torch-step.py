#!/usr/bin/env python3
"""A ZeRO-Offload-like training loop in plain PyTorch, for zbench trace (the trace suite of scripts/gpu-suite.sh).

Each step: a batch of random activations through `--layers` Linear layers (fp32) on the GPU,
backward, the gradients copied D2H into pinned host buffers, AdamW on fp32 master weights on the
CPU (torch.optim.AdamW, fused when this torch has it), the updated weights copied H2D. With --nvtx
the step is an NVTX range "train_step" and the optimizer one named "cpu_adam" (torch.cuda.nvtx).
Prints one line per step "ZBSTEP <i> <ms>" (wall time between CUDA synchronizations) and at the
end "ZBSUMMARY {json}" with the median step time, parameters and bytes copied each way per step.
With --kineto FILE the loop runs under torch.profiler (CPU and CUDA activity, a schedule of 1 step
waited, 1 warm-up, --steps - 2 recorded, prof.step() after each step: ProfilerStep#N ranges) and
the trace is written to FILE (gzip when it ends in .gz), for zbench import.
"""
import contextlib
import argparse
import json
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--nvtx", action="store_true")
    ap.add_argument("--kineto", help="profile with torch.profiler and write its Chrome trace here")
    a = ap.parse_args()
    nvtx = torch.cuda.nvtx if a.nvtx else None
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(a.hidden, a.hidden) for _ in range(a.layers)]).to(dev)
    params = list(model.parameters())
    master = [p.detach().to("cpu").pin_memory() for p in params]
    grads = [torch.empty_like(m).pin_memory() for m in master]
    for m, g in zip(master, grads):
        m.grad = g
    try:
        opt = torch.optim.AdamW(master, lr=1e-4, fused=True)
    except (RuntimeError, TypeError):
        opt = torch.optim.AdamW(master, lr=1e-4, foreach=True)
    nparams = sum(p.numel() for p in params)
    times = []
    with profiler(a) as prof:
        run(a, model, params, grads, master, opt, nvtx, dev, times, prof)
    steady = times[2:] if len(times) > 4 else times
    print("ZBSUMMARY " + json.dumps({
        "median_step_ms": statistics.median(steady), "steps": a.steps, "params": nparams,
        "d2h_bytes_per_step": 4 * nparams, "h2d_bytes_per_step": 4 * nparams, "nvtx": bool(a.nvtx),
        "torch": torch.__version__, "optimizer": type(opt).__name__ + (" fused" if opt.defaults.get("fused") else ""),
        "kineto": a.kineto, "profiled_steps": list(range(2, a.steps)) if a.kineto else [],
    }), flush=True)


def profiler(a):
    """torch.profiler over steps 2.. (1 waited, 1 warm-up), or nothing."""
    if not a.kineto:
        return contextlib.nullcontext()
    from torch.profiler import ProfilerActivity, profile, schedule
    return profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                   schedule=schedule(wait=1, warmup=1, active=a.steps - 2, repeat=1),
                   on_trace_ready=lambda p: p.export_chrome_trace(a.kineto))


def run(a, model, params, grads, master, opt, nvtx, dev, times, prof):
    for i in range(a.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        if nvtx:
            nvtx.range_push("train_step")
        x = torch.randn(a.batch, a.hidden, device=dev)
        loss = model(x).pow(2).mean()
        loss.backward()
        for p, g in zip(params, grads):
            g.copy_(p.grad, non_blocking=True)
            p.grad = None
        torch.cuda.synchronize()
        if nvtx:
            nvtx.range_push("cpu_adam")
        opt.step()
        if nvtx:
            nvtx.range_pop()
        with torch.no_grad():
            for p, m in zip(params, master):
                p.copy_(m, non_blocking=True)
        torch.cuda.synchronize()
        if nvtx:
            nvtx.range_pop()
        ms = (time.perf_counter() - t0) * 1e3
        times.append(ms)
        print(f"ZBSTEP {i} {ms:.3f}", flush=True)
        if prof is not None:
            prof.step()


if __name__ == "__main__":
    main()
