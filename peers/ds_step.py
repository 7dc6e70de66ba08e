#!/usr/bin/env python3
"""Measure training steps of real DeepSpeed (or plain PyTorch) on a zbench model shape.

One process measures one configuration: it builds a decoder-only transformer of the
given shape (GPT-2 family or Llama family), runs deepspeed.initialize with the given
DeepSpeed JSON config and times N training steps on random tokens. The result is ONE
JSON line on stdout, last line of the output (everything else goes to stderr or
precedes it), so `zbench validate --deepspeed` can run this script and read it.

    python3 peers/ds_step.py --family gpt --layers 32 --hidden 2560 --heads 32 \
        --vocab 50257 --seq 2048 --micro-batch 4 --steps 8 \
        --ds-config peers/configs/s2-off.json

Timing: torch.cuda.synchronize() before and after each step (a step is `gas` micro
steps of engine(batch) + engine.backward(loss), then engine.step()); step_ms is the
median of the steps after the first three (warm-up: allocator growth, CPU Adam JIT,
pinned-buffer creation). Per-phase times are host wall times of the engine calls
(DeepSpeed synchronizes inside some of them; --phase-sync adds a synchronize after
each phase so the split is the device's, at the price of a little lost overlap).

Several GPUs (--world-size N, data parallel, one process per GPU): this process
starts N copies of itself with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set (or run it under `python3 -m torch.distributed.run --nproc_per_node N`,
which sets them), each rank draws its own batches, and rank 0 gathers every rank's
figures and prints the one JSON line: step_ms is the slowest rank's median (a
data-parallel step ends when every rank's does), steps_ms the per-step maximum,
gpu_peak_GiB and gpu_reserved_GiB the largest rank's, host_rss_GiB the sum over the
ranks (they share the host), and "ranks" each rank's own. If a rank fails the
others are stopped. Each rank runs on its own contiguous 1/N of the cores with
OMP_NUM_THREADS set to their number (DeepSpeed's --bind_cores_to_rank; zbench run
--gpus splits the cores the same way).

The JSON line: step_ms (median after warm-up), steps_ms (every step), fwd_ms, bwd_ms,
opt_ms (medians of the per-step sums of engine(), engine.backward(), engine.step() host
wall time), gpu_peak_GiB (torch.cuda.max_memory_allocated), gpu_reserved_GiB
(max_memory_reserved), host_rss_GiB (peak resident set, VmHWM), params, the shape and
batch it ran, versions, measured_at.
"""
import argparse
import contextlib
import copy
import json
import os
import platform
import resource
import socket
import statistics
import sys
import time

WARMUP_STEPS = 3


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--family", choices=["gpt", "llama"], required=True)
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--hidden", type=int, required=True)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--kv-heads", type=int, default=0, help="llama: key/value heads (GQA); default = heads")
    p.add_argument("--ffn", type=int, default=0, help="MLP width; default 4*hidden (gpt), required for llama")
    p.add_argument("--vocab", type=int, required=True)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--max-positions", type=int, default=0, help="gpt: learned positions; default = seq")
    p.add_argument("--rope-theta", type=float, default=10000.0)
    p.add_argument("--tied-head", action="store_true", help="llama: the LM head shares the token embedding")
    p.add_argument("--micro-batch", type=int, required=True)
    p.add_argument("--gas", type=int, default=1, help="gradient accumulation steps per step")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--ds-config", help="DeepSpeed JSON config (bf16); micro-batch and gas are set from the flags")
    p.add_argument("--no-deepspeed", action="store_true",
                   help="plain PyTorch: fp32 weights, bf16 autocast, fused AdamW on the GPU")
    p.add_argument("--no-zero-init", action="store_true",
                   help="stage 3: build the model on the host instead of under deepspeed.zero.Init")
    p.add_argument("--loss-dtype", choices=["fp32", "bf16"], default="fp32",
                   help="dtype of the logits fed to cross-entropy (fp32 upcast as Hugging Face models do)")
    p.add_argument("--phase-sync", action="store_true", help="synchronize after each phase too")
    p.add_argument("--attention", choices=["auto", "flash"], default="auto",
                   help="auto: PyTorch picks the SDPA kernel (flash for bf16 causal on Hopper); "
                        "flash: only the flash kernel (an error where it cannot run)")
    p.add_argument("--nvtx", action="store_true", help="NVTX ranges: 'step N', 'forward', 'backward', 'optimizer'")
    p.add_argument("--step-split", action="store_true",
                   help="host time per DeepSpeed optimizer method (peers/ds_split.py) in the JSON line")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--world-size", type=int, default=int(os.environ.get("WORLD_SIZE", "1")),
                   help="data-parallel GPUs, one process each (default: $WORLD_SIZE or 1)")
    a = p.parse_args(argv)
    problems = []
    for name in ("layers", "hidden", "heads", "vocab", "seq", "micro_batch", "gas", "steps", "world_size"):
        if getattr(a, name) <= 0:
            problems.append(f"--{name.replace('_', '-')} must be positive, got {getattr(a, name)}")
    if a.kv_heads == 0:
        a.kv_heads = a.heads
    if a.ffn == 0:
        if a.family == "llama":
            problems.append("--ffn is required for --family llama")
        a.ffn = 4 * a.hidden
    if a.max_positions == 0:
        a.max_positions = a.seq
    if a.heads > 0 and a.hidden % a.heads:
        problems.append(f"--hidden {a.hidden} is not a multiple of --heads {a.heads}")
    if a.kv_heads <= 0 or (a.heads > 0 and a.heads % a.kv_heads):
        problems.append(f"--heads {a.heads} is not a multiple of --kv-heads {a.kv_heads}")
    if a.family == "gpt" and a.tied_head:
        problems.append("--tied-head is for --family llama (gpt's head is always tied)")
    if a.family == "gpt" and a.kv_heads != a.heads:
        problems.append(f"--family gpt has no GQA: --kv-heads {a.kv_heads} != --heads {a.heads}")
    if a.seq > a.max_positions:
        problems.append(f"--seq {a.seq} exceeds --max-positions {a.max_positions}")
    if a.steps <= WARMUP_STEPS:
        problems.append(f"--steps {a.steps} leaves no step after the {WARMUP_STEPS} warm-up steps")
    if a.no_deepspeed == bool(a.ds_config):
        problems.append("give exactly one of --ds-config FILE and --no-deepspeed")
    if a.world_size > 1 and a.no_deepspeed:
        problems.append(f"--world-size {a.world_size} is for DeepSpeed (--no-deepspeed runs one GPU)")
    if problems:
        p.error("; ".join(problems))
    return a


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def single_process_env():
    """A one-GPU DeepSpeed run still initializes torch.distributed from these."""
    for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1")):
        os.environ.setdefault(key, value)
    if "MASTER_PORT" not in os.environ:
        os.environ["MASTER_PORT"] = str(free_port())


def launch_ranks(a, argv):
    """Start one process per rank (this script again, with the rank's environment),
    rank 0's stdout passed through and the others' on stderr; stop them all when one
    fails. Returns the exit status: 0, or the first failing rank's."""
    import signal
    import subprocess
    port = str(free_port())
    cpus = sorted(os.sched_getaffinity(0))
    n = a.world_size
    procs = []

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)  # a timeout that stops this process stops the ranks too
    for r in range(n):
        # each rank on its own contiguous 1/n of the cores, as deepspeed --bind_cores_to_rank
        # does and zbench run --gpus gives its ranks' CPU Adam pools (exec/threadpool.h)
        mine = cpus[len(cpus) * r // n:len(cpus) * (r + 1) // n] or cpus
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(n), LOCAL_WORLD_SIZE=str(n),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=port, OMP_NUM_THREADS=str(len(mine)))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + argv, env=env,
                                      stdout=None if r == 0 else sys.stderr,
                                      preexec_fn=lambda m=mine: os.sched_setaffinity(0, m)))
    print(f"ds_step: {n} ranks started, {len(cpus) // n} cores each", file=sys.stderr)
    status = 0
    try:
        while procs and status == 0:
            for p in list(procs):
                rc = p.poll()
                if rc is None:
                    continue
                procs.remove(p)
                if rc != 0:
                    status = rc if rc > 0 else 128 - rc
                    print(f"ds_step: a rank exited with status {rc}; stopping the others", file=sys.stderr)
            time.sleep(0.2)
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                p.terminate()
        for p in procs:
            p.wait()
    return status


def combine_ranks(torch, result):
    """Rank 0: the line of every rank in one (see the module's docstring); others: None."""
    dist = torch.distributed
    mine = {k: result[k] for k in ("step_ms", "steps_ms", "fwd_ms", "bwd_ms", "opt_ms", "gpu_peak_GiB",
                                   "gpu_reserved_GiB", "host_rss_GiB")}
    mine["rank"] = dist.get_rank()
    everyone = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
    dist.gather_object(mine, everyone, dst=0)
    if dist.get_rank() != 0:
        return None
    out = dict(result)
    out["world_size"] = len(everyone)
    out["ranks"] = everyone
    out["rank0_step_ms"] = everyone[0]["step_ms"]
    out["step_ms"] = max(r["step_ms"] for r in everyone)
    out["steps_ms"] = [round(max(ts), 3) for ts in zip(*(r["steps_ms"] for r in everyone))]
    for k in ("gpu_peak_GiB", "gpu_reserved_GiB"):
        out[k] = max(r[k] for r in everyone)
    out["host_rss_GiB"] = sum(r["host_rss_GiB"] for r in everyone)
    return out


def load_ds_config(path, a):
    try:
        with open(path) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"ds_step: cannot read DeepSpeed config {path}: {e}")
    if not isinstance(cfg, dict):
        raise SystemExit(f"ds_step: DeepSpeed config {path} is not a JSON object")
    # The shape flags own the batch: one source of truth for the harness and zbench.
    cfg["train_micro_batch_size_per_gpu"] = a.micro_batch
    cfg["gradient_accumulation_steps"] = a.gas
    cfg.pop("train_batch_size", None)
    cfg.setdefault("steps_per_print", 1 << 30)
    return cfg


# ---------------------------------------------------------------- model

def build_model_classes(torch, attention):
    nn = torch.nn
    F = torch.nn.functional
    if attention == "flash":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        only_flash = lambda: sdpa_kernel([SDPBackend.FLASH_ATTENTION])  # noqa: E731
    else:
        only_flash = contextlib.nullcontext

    def sdpa(q, k, v, gqa):
        # q: (b, heads, s, d); k, v: (b, kv_heads, s, d). The backward kernel follows the forward's.
        with only_flash():
            if gqa:
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    class GptBlock(nn.Module):
        def __init__(self, a):
            super().__init__()
            self.heads = a.heads
            self.ln1 = nn.LayerNorm(a.hidden)
            self.qkv = nn.Linear(a.hidden, 3 * a.hidden)
            self.proj = nn.Linear(a.hidden, a.hidden)
            self.ln2 = nn.LayerNorm(a.hidden)
            self.fc = nn.Linear(a.hidden, a.ffn)
            self.out = nn.Linear(a.ffn, a.hidden)

        def forward(self, x):
            b, s, h = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
            q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
            y = sdpa(q, k, v, False).transpose(1, 2).reshape(b, s, h)
            x = x + self.proj(y)
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class Gpt(nn.Module):
        """GPT-2: learned positions, LayerNorm, GeLU MLP, biases, head tied to the embedding."""

        def __init__(self, a):
            super().__init__()
            self.wte = nn.Embedding(a.vocab, a.hidden)
            self.wpe = nn.Embedding(a.max_positions, a.hidden)
            self.blocks = nn.ModuleList(GptBlock(a) for _ in range(a.layers))
            self.ln_f = nn.LayerNorm(a.hidden)

        def forward(self, tokens):
            pos = torch.arange(tokens.shape[1], device=tokens.device)
            x = self.wte(tokens) + self.wpe(pos)
            for blk in self.blocks:
                x = blk(x)
            return F.linear(self.ln_f(x), self.wte.weight)  # tied head

    class RMSNorm(nn.Module):
        def __init__(self, n, eps=1e-5):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(n))

        def forward(self, x):
            xf = x.float()
            xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
            return xf.to(x.dtype) * self.weight

    def rotate(x, cos, sin):
        # in x's dtype: under autocast (--no-deepspeed) q and k are bf16 while the tables are fp32
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    class LlamaBlock(nn.Module):
        def __init__(self, a):
            super().__init__()
            self.heads, self.kv_heads, self.hd = a.heads, a.kv_heads, a.hidden // a.heads
            self.norm1 = RMSNorm(a.hidden)
            self.q = nn.Linear(a.hidden, a.heads * self.hd, bias=False)
            self.k = nn.Linear(a.hidden, a.kv_heads * self.hd, bias=False)
            self.v = nn.Linear(a.hidden, a.kv_heads * self.hd, bias=False)
            self.o = nn.Linear(a.heads * self.hd, a.hidden, bias=False)
            self.norm2 = RMSNorm(a.hidden)
            self.gate = nn.Linear(a.hidden, a.ffn, bias=False)
            self.up = nn.Linear(a.hidden, a.ffn, bias=False)
            self.down = nn.Linear(a.ffn, a.hidden, bias=False)

        def forward(self, x, cos, sin):
            b, s, h = x.shape
            y = self.norm1(x)
            q = self.q(y).view(b, s, self.heads, self.hd).transpose(1, 2)
            k = self.k(y).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
            v = self.v(y).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            y = sdpa(q, k, v, self.kv_heads != self.heads).transpose(1, 2).reshape(b, s, h)
            x = x + self.o(y)
            y = self.norm2(x)
            return x + self.down(F.silu(self.gate(y)) * self.up(y))

    class Llama(nn.Module):
        """Llama: RMSNorm, SwiGLU, GQA, rotary positions, no biases, untied head unless --tied-head."""

        def __init__(self, a):
            super().__init__()
            self.hd, self.theta = a.hidden // a.heads, a.rope_theta
            self.embed = nn.Embedding(a.vocab, a.hidden)
            self.blocks = nn.ModuleList(LlamaBlock(a) for _ in range(a.layers))
            self.norm = RMSNorm(a.hidden)
            self.head = None if a.tied_head else nn.Linear(a.hidden, a.vocab, bias=False)
            self._rope = {}  # (device, seq, dtype) -> (cos, sin); not a buffer, so ZeRO leaves it alone

        def rope(self, s, device, dtype):
            key = (device, s, dtype)
            if key not in self._rope:
                inv = 1.0 / (self.theta ** (torch.arange(0, self.hd, 2, device=device).float() / self.hd))
                f = torch.outer(torch.arange(s, device=device).float(), inv)
                f = torch.cat((f, f), dim=-1)
                self._rope[key] = (f.cos().to(dtype), f.sin().to(dtype))
            return self._rope[key]

        def forward(self, tokens):
            x = self.embed(tokens)
            cos, sin = self.rope(tokens.shape[1], tokens.device, x.dtype)
            for blk in self.blocks:
                x = blk(x, cos, sin)
            x = self.norm(x)
            return F.linear(x, self.embed.weight) if self.head is None else self.head(x)

    return Gpt, Llama


def make_loss_module(torch, net, loss_fp32):
    F = torch.nn.functional

    class WithLoss(torch.nn.Module):
        """The module DeepSpeed drives returns the loss (cross-entropy on next tokens)."""

        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, batch):
            logits = self.net(batch[:, :-1])
            if loss_fp32:
                logits = logits.float()
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))

    return WithLoss()


def count_params(model):
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        n += getattr(p, "ds_numel", p.numel())  # stage 3 partitions: numel() is the local shard
    return n


# ---------------------------------------------------------------- measurement

def host_peak_rss_gib():
    """Peak resident set of this process: VmHWM, else ru_maxrss (KiB on Linux)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


class Phases:
    """Host wall time per phase, optional NVTX range and synchronize."""

    def __init__(self, torch, nvtx, sync):
        self.torch, self.nvtx, self.sync = torch, nvtx, sync
        self.ms = {}

    def run(self, name, label, fn):
        if self.nvtx:
            self.torch.cuda.nvtx.range_push(label)
        t0 = time.perf_counter()
        out = fn()
        if self.sync:
            self.torch.cuda.synchronize()
        self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - t0) * 1e3
        if self.nvtx:
            self.torch.cuda.nvtx.range_pop()
        return out


def run_steps(torch, a, micro_fwd, micro_bwd, opt_step, step_every_micro, after_step=None):
    """Time a.steps steps; returns (per-step ms, per-step phase dicts).

    DeepSpeed wants engine.step() after every micro batch (it counts micro steps to find the
    accumulation boundary and only updates there); plain PyTorch steps once per step."""
    gen = torch.Generator(device="cuda")
    gen.manual_seed(a.seed + int(os.environ.get("RANK", "0")))  # each data-parallel rank its own batches
    steps_ms, phases = [], []
    for i in range(a.steps):
        ph = Phases(torch, a.nvtx, a.phase_sync)
        batches = [torch.randint(a.vocab, (a.micro_batch, a.seq + 1), device="cuda", generator=gen)
                   for _ in range(a.gas)]
        torch.cuda.synchronize()
        if a.nvtx:
            torch.cuda.nvtx.range_push(f"step {i}")
        t0 = time.perf_counter()
        for j, b in enumerate(batches):
            loss = ph.run("fwd", "forward", lambda: micro_fwd(b))
            ph.run("bwd", "backward", lambda: micro_bwd(loss))
            if step_every_micro or j == a.gas - 1:
                ph.run("step", "optimizer", opt_step)
        torch.cuda.synchronize()
        steps_ms.append((time.perf_counter() - t0) * 1e3)
        if a.nvtx:
            torch.cuda.nvtx.range_pop()
        phases.append(ph.ms)
        if after_step:
            after_step(ph.ms.get("step", 0.0))
        if not torch.isfinite(loss.detach().float()):
            raise SystemExit(f"ds_step: loss is {loss.item()} at step {i}")
        print(f"ds_step: step {i} {steps_ms[-1]:.1f} ms loss {loss.item():.3f}", file=sys.stderr)
    return steps_ms, phases


def setup_deepspeed(torch, a, build_net):
    import deepspeed
    cfg = load_ds_config(a.ds_config, a)
    zero = cfg.get("zero_optimization", {}) or {}
    stage = int(zero.get("stage", 0))
    zero_init = stage == 3 and not a.no_zero_init
    if zero_init:
        # Stage 3's own way to build a model: parameters are partitioned as they are created.
        with deepspeed.zero.Init(config_dict_or_path=copy.deepcopy(cfg)):
            net = build_net()
    else:
        net = build_net()
    model = make_loss_module(torch, net, a.loss_dtype == "fp32")
    tied = net.wte.weight if a.family == "gpt" else net.embed.weight if a.tied_head else None
    if stage == 3 and tied is not None:
        # The tied head reads the embedding weight outside its module: tell stage 3 to gather it there.
        deepspeed.zero.register_external_parameter(net, tied)
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                               config=copy.deepcopy(cfg))
    info = {"deepspeed": deepspeed.__version__, "zero_stage": stage, "zero_init": zero_init}
    return engine, model, info, (engine, engine.backward, engine.step, True)


def setup_torch(torch, a, build_net):
    model = make_loss_module(torch, build_net(), a.loss_dtype == "fp32").cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)

    def fwd(b):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return model(b) / a.gas

    def step():
        opt.step()
        opt.zero_grad(set_to_none=True)

    return model, model, {"deepspeed": None, "zero_stage": None, "zero_init": False}, (fwd, lambda l: l.backward(), step, False)


def median_phase(phases, name):
    return statistics.median(p.get(name, 0.0) for p in phases)


def main(argv):
    a = parse_args(argv)
    if a.world_size > 1 and "RANK" not in os.environ:
        sys.exit(launch_ranks(a, argv))
    if a.world_size != int(os.environ.get("WORLD_SIZE", "1")):
        raise SystemExit(f"ds_step: --world-size {a.world_size} but WORLD_SIZE={os.environ.get('WORLD_SIZE')}")
    single_process_env()
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("ds_step: no CUDA device visible to PyTorch")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    torch.manual_seed(a.seed)
    Gpt, Llama = build_model_classes(torch, a.attention)
    build_net = (lambda: Gpt(a)) if a.family == "gpt" else (lambda: Llama(a))
    setup = setup_torch if a.no_deepspeed else setup_deepspeed
    engine, model, info, (fwd, bwd, step, every_micro) = setup(torch, a, build_net)
    split = None
    if a.step_split and info["zero_stage"] in (1, 2, 3):
        from ds_split import Split  # peers/ds_split.py, next to this script
        split = Split(engine.optimizer, torch)
    steps_ms, phases = run_steps(torch, a, fwd, bwd, step, every_micro, split.end_step if split else None)
    timed, timed_ph = steps_ms[WARMUP_STEPS:], phases[WARMUP_STEPS:]
    result = {
        "harness": "ds_step", "format": 1,
        "config": os.path.splitext(os.path.basename(a.ds_config))[0] if a.ds_config else "torch",
        "ds_config": a.ds_config, "family": a.family, "layers": a.layers, "hidden": a.hidden,
        "heads": a.heads, "kv_heads": a.kv_heads, "tied_head": a.family == "gpt" or a.tied_head, "ffn": a.ffn, "vocab": a.vocab, "seq": a.seq,
        "micro_batch": a.micro_batch, "gas": a.gas, "steps": a.steps, "warmup_steps": WARMUP_STEPS,
        "loss_dtype": a.loss_dtype, "phase_sync": a.phase_sync, "attention": a.attention,
        "params": count_params(model),
        "step_ms": statistics.median(timed),
        "steps_ms": [round(t, 3) for t in steps_ms],
        "fwd_ms": median_phase(timed_ph, "fwd"), "bwd_ms": median_phase(timed_ph, "bwd"),
        "opt_ms": median_phase(timed_ph, "step"),
        "gpu_peak_GiB": torch.cuda.max_memory_allocated() / 2**30,
        "gpu_reserved_GiB": torch.cuda.max_memory_reserved() / 2**30,
        "host_rss_GiB": host_peak_rss_gib(),
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "cuda": torch.version.cuda, "deepspeed": info["deepspeed"],
                     "gpu": torch.cuda.get_device_name()},
        "zero_stage": info["zero_stage"], "zero_init": info["zero_init"],
        "host": socket.gethostname(), "cpus": os.cpu_count(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    result["world_size"] = a.world_size
    if split:
        result.update(split.result(WARMUP_STEPS))
    if a.world_size > 1:
        print(f"ds_step: rank {os.environ['RANK']}: {json.dumps(result)}", file=sys.stderr)
        result = combine_ranks(torch, result)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    if result is None:
        return  # not rank 0: rank 0 prints the line of all
    sys.stdout.flush()
    print(json.dumps(result), flush=True)  # last line of stdout: what zbench validate reads


if __name__ == "__main__":
    main(sys.argv[1:])
