#!/usr/bin/env python3
"""Time DeepSpeed ZeRO-3's per-module and per-parameter host paths: the unit costs of
schedules/deepspeed.c's ZeRO-3 terms (hook_s, fetch_s, z3_grad_s, flush_s).

One process, one GPU, DeepSpeed 0.19 (world size 1). Each case is a chain of N small
modules run forward and backward by a ZeRO-3 engine (deepspeed.zero.Init, offload_optimizer
cpu pinned, bf16) on a tiny batch, so the GPU's kernels are microseconds and the step's
host time is DeepSpeed's Python: the cases differ in one count at a time and each cost is
the slope of the host time of one micro-step (forward + backward, timed with
torch.cuda.synchronize() around them; the optimizer step is left out) against that count:

  hook_s     modules without parameters, N = 100 and 400: the pre and post hooks of a
             module in one pass (schedules/ds_trace.h counts a pre and a post hook per
             module and pass); the same chains under plain PyTorch give the kernel
             launches' share, taken off;
  fetch_s    modules of k parameters of 64 K elements, offload_param cpu pinned,
             stage3_param_persistence_threshold 0, stage3_prefetch_bucket_size 0 and
             stage3_max_reuse_distance 0 (every parameter gathered at its module's
             pre-hook, freed at its post-hook, in both passes): against the same chain
             without offload_param, per parameter gathered (its 128 KB copy at the link's
             rate, ~2.5 us, left in: the copy path's own latency belongs to the cost);
  z3_grad_s  the same chains without offload_param, k = 1 and 4, reduce_bucket_size large
             (one bucket): per gradient hook (the hook and its share of partition_grads);
  flush_s    k = 4, reduce_bucket_size 1 (a bucket per gradient) against one bucket: per
             bucket reduced.

Prints one JSON line per case and last a line {"costs": {...}} with the four values in
seconds, the counts and the slopes they come from; peers/ds_fetch_bench.py --help says the
flags. Takes ~3 minutes on the H200 machine (engine start-ups dominate). Run it with
scripts/ds-fetch-bench.sh, which installs DeepSpeed from .whl/ and writes
$OUT/ds-fetch-bench.jsonl.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

ELEMS = 65536  # per parameter: above any persistence threshold but the copies stay short


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=12, help="micro-steps per case (the first 4 are warm-up)")
    p.add_argument("--modules", type=int, nargs=2, default=[100, 400], help="the two chain lengths of hook_s")
    p.add_argument("--param-modules", type=int, default=100, help="modules of the parameter cases")
    p.add_argument("--out", default=None, help="also append the JSON lines to this file")
    return p.parse_args(argv)


def env():
    """One rank, as a single-GPU DeepSpeed run needs."""
    for k, v in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1")):
        os.environ.setdefault(k, v)
    if "MASTER_PORT" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])


def chain(torch, n, k):
    """n modules in a row, each with k parameters of ELEMS elements (0: none); each adds
    its parameters' first element to the activation, so every parameter gets a gradient."""
    nn = torch.nn

    class Step(nn.Module):
        # the parameters are the module's own (fetch_sub_module gathers a module's own,
        # not its children's: a ParameterList would take DeepSpeed's external path)
        def __init__(self):
            super().__init__()
            for i in range(k):
                setattr(self, "p%d" % i, nn.Parameter(torch.randn(ELEMS) * 0.01))

        def forward(self, x):
            for i in range(k):
                x = x + getattr(self, "p%d" % i)[:1]
            return x * 1.0 if k == 0 else x

    class Chain(nn.Module):
        def __init__(self):
            super().__init__()
            self.steps = nn.ModuleList(Step() for _ in range(n))
            self.head = nn.Linear(8, 8)

        def forward(self, x):
            for s in self.steps:
                x = s(x)
            return self.head(x).float().pow(2).mean()

    return Chain()


def ds_config(offload_param, bucket):
    z = {
        "stage": 3,
        "offload_optimizer": {"device": "cpu", "pin_memory": True},
        "stage3_param_persistence_threshold": 0,
        "stage3_prefetch_bucket_size": 0,
        "stage3_max_reuse_distance": 0,
        "reduce_bucket_size": bucket,
        "sub_group_size": 1000000000,
    }
    if offload_param:
        z["offload_param"] = {"device": "cpu", "pin_memory": True}
    return {
        "train_micro_batch_size_per_gpu": 1,
        "gradient_accumulation_steps": 1,
        "bf16": {"enabled": True},
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
        "zero_optimization": z,
        "steps_per_print": 1000000000,
    }


def time_micro(torch, fwd_bwd, steps, after=None):
    """Median host seconds of forward + backward over the steps after the warm-up; after
    (the optimizer step, untimed) runs between them."""
    out = []
    for i in range(steps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fwd_bwd()
        torch.cuda.synchronize()
        out.append(time.perf_counter() - t)
        if after:
            after()
    return statistics.median(out[4:])


def case_deepspeed(torch, deepspeed, n, k, offload_param, bucket, steps):
    cfg = ds_config(offload_param, bucket)
    with deepspeed.zero.Init(config_dict_or_path=cfg):
        model = chain(torch, n, k)
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=cfg)
    x = torch.randn(1, 8, device="cuda", dtype=torch.bfloat16)

    def fwd_bwd():
        loss = engine(x)
        engine.backward(loss)

    def step():
        fwd_bwd()
        engine.step()

    for _ in range(3):  # the trace is recorded on the first micro-steps, then complete
        step()
    s = time_micro(torch, fwd_bwd, steps, engine.step)
    if hasattr(engine, "destroy"):
        engine.destroy()
    del engine, model
    torch.cuda.empty_cache()
    return s


def case_torch(torch, n, steps):
    model = chain(torch, n, 0).cuda().to(torch.bfloat16)
    x = torch.randn(1, 8, device="cuda", dtype=torch.bfloat16)

    def fwd_bwd():
        model(x).backward()

    return time_micro(torch, fwd_bwd, steps, lambda: model.zero_grad(set_to_none=True))


def main(argv):
    a = parse_args(argv)
    env()
    import torch
    import deepspeed

    lines = []

    def emit(d):
        line = json.dumps(d)
        print(line, flush=True)
        lines.append(line)

    big = 1 << 30
    n1, n2 = a.modules
    m = a.param_modules
    t = {}
    deepspeed.init_distributed()
    for n in (n1, n2):
        t[("hooks", n)] = case_deepspeed(torch, deepspeed, n, 0, False, big, a.steps)
        t[("torch", n)] = case_torch(torch, n, a.steps)
        emit({"case": "hooks", "modules": n, "ds_s": t[("hooks", n)], "torch_s": t[("torch", n)]})
    for k in (1, 4):
        t[("gpu", k)] = case_deepspeed(torch, deepspeed, m, k, False, big, a.steps)
        t[("off", k)] = case_deepspeed(torch, deepspeed, m, k, True, big, a.steps)
        emit({"case": "params", "modules": m, "k": k, "on_gpu_s": t[("gpu", k)], "offload_param_s": t[("off", k)]})
    t["flush"] = case_deepspeed(torch, deepspeed, m, 4, False, 1, a.steps)
    emit({"case": "flush", "modules": m, "k": 4, "bucket": 1, "s": t["flush"]})

    # a module's pre + post hooks in one pass, two passes per micro-step; the chains
    # differ by n2 - n1 modules (Chain and head fire in both, the ModuleList is not called)
    hook = ((t[("hooks", n2)] - t[("hooks", n1)]) - (t[("torch", n2)] - t[("torch", n1)])) / (2 * (n2 - n1))
    # per parameter gathered from host memory beyond the on-GPU path: every parameter
    # twice a micro-step (no reuse window, no prefetch), 3 more per module from k = 1 to 4
    fetch = ((t[("off", 4)] - t[("gpu", 4)]) - (t[("off", 1)] - t[("gpu", 1)])) / (2 * m * 3)
    # per gradient hook, 3 more per module from k = 1 to 4 (it also takes the on-GPU
    # fetch bookkeeping of those parameters in both passes: the model has no term of its
    # own for it, hook_s is per module)
    grad = (t[("gpu", 4)] - t[("gpu", 1)]) / (m * 3)
    # per bucket: 4 m + 2 gradients, a bucket each, against one
    flush = (t["flush"] - t[("gpu", 4)]) / (4 * m + 2 - 1)
    emit({"costs": {"hook_s": hook, "fetch_s": fetch, "z3_grad_s": grad, "flush_s": flush},
          "elems_per_param": ELEMS, "torch": torch.__version__, "deepspeed": deepspeed.__version__,
          "gpu": torch.cuda.get_device_name(), "cpus": os.cpu_count(),
          "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    if a.out:
        with open(a.out, "a") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
