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

With --hf-config FILE instead of the shape flags the model is a Hugging Face one built
from that config.json by transformers (peers/hf_model.py: random weights, zero.Init for
stage 3, "auto" in the DeepSpeed JSON resolved as the Trainer resolves it), trained as the
Trainer trains it (engine(input_ids=, labels=).loss, the loss upcast to fp32 inside the
model), with --dtype, HF gradient checkpointing (--grad-ckpt) and SDPA attention:

    python3 peers/ds_step.py --hf-config peers/models/llama-3.2-1b.json --seq 2048 \
        --micro-batch 4 --gas 4 --steps 6 --warmup 2 --ds-counts \
        --ds-config peers/configs/hf-z3-offload.json

--ds-counts adds DeepSpeed's per-module fetch/release and per-tensor gradient paths,
counted and timed per step (peers/ds_counts.py); --profile-steps N runs N more steps under
torch.profiler and writes their Kineto (Chrome trace) JSON to --profile-out; --device cpu
runs the same code on the host (DeepSpeed's CPU accelerator, gloo), which is how
--self-test checks it without a GPU; --dry-run stops after building the model on the meta
device and resolving the config, and prints a line marked "dry_run" with no timings.

Timing: torch.cuda.synchronize() before and after each step (a step is `gas` micro
steps of engine(batch) + engine.backward(loss), then engine.step()); step_ms is the
median of the steps after the warm-up ones (--warmup, default 3: allocator growth, CPU Adam JIT,
pinned-buffer creation, ZeRO-3's first step records the module trace its prefetch follows). Per-phase times are host wall times of the engine calls
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
(max_memory_reserved; with --hf-config from after deepspeed.initialize, the model's build
and DeepSpeed's set-up are in gpu_init_peak_GiB), host_rss_GiB (peak resident set, VmHWM),
params, the shape and batch it ran, versions, measured_at; with fp16 the per-step overflow
flags and loss scales and DeepSpeed's skipped_steps.
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
    p.add_argument("--hf-config", help="Hugging Face config.json: build that model with transformers "
                                       "(instead of --family and the shape flags)")
    p.add_argument("--family", choices=["gpt", "llama"], help="the harness's own modules of this family")
    p.add_argument("--layers", type=int, default=0)
    p.add_argument("--hidden", type=int, default=0)
    p.add_argument("--heads", type=int, default=0)
    p.add_argument("--kv-heads", type=int, default=0, help="llama: key/value heads (GQA); default = heads")
    p.add_argument("--ffn", type=int, default=0, help="MLP width; default 4*hidden (gpt), required for llama")
    p.add_argument("--vocab", type=int, default=0)
    p.add_argument("--seq", type=int, default=0)
    p.add_argument("--max-positions", type=int, default=0, help="gpt: learned positions; default = seq")
    p.add_argument("--rope-theta", type=float, default=10000.0)
    p.add_argument("--tied-head", action="store_true", help="llama: the LM head shares the token embedding")
    p.add_argument("--micro-batch", type=int, default=0)
    p.add_argument("--gas", type=int, default=1, help="gradient accumulation steps per step")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=WARMUP_STEPS, help="steps left out of the median (default 3)")
    p.add_argument("--ds-config", help="DeepSpeed JSON config; micro-batch and gas are set from the flags")
    p.add_argument("--no-deepspeed", action="store_true",
                   help="plain PyTorch: fp32 weights, bf16 autocast, fused AdamW on the GPU")
    p.add_argument("--no-zero-init", action="store_true",
                   help="stage 3 (own modules): build the model on the host instead of under deepspeed.zero.Init")
    p.add_argument("--loss-dtype", choices=["fp32", "bf16"], default="fp32",
                   help="own modules: dtype of the logits fed to cross-entropy (fp32 upcast as Hugging Face does)")
    p.add_argument("--dtype", choices=["bf16", "fp16"],
                   help="--hf-config: the Trainer's --bf16/--fp16 (fills \"auto\"); default: the config's")
    p.add_argument("--grad-ckpt", choices=["none", "gpu", "cpu"], default="none",
                   help="--hf-config: HF gradient checkpointing, checkpoints on the GPU or in pinned host memory")
    p.add_argument("--init-device", choices=["cuda", "cpu"], default="cuda",
                   help="--hf-config below ZeRO-3: where from_config builds the model (default cuda)")
    p.add_argument("--phase-sync", action="store_true", help="synchronize after each phase too")
    p.add_argument("--attention", choices=["auto", "flash", "sdpa", "eager"], default="auto",
                   help="auto/sdpa: PyTorch picks the SDPA kernel (flash for bf16/fp16 causal on Hopper); "
                        "flash: only SDPA's flash kernel (an error where it cannot run); eager: --hf-config, "
                        "Hugging Face's matmul-softmax attention")
    p.add_argument("--nvtx", action="store_true", help="NVTX ranges: 'step N', 'forward', 'backward', 'optimizer'")
    p.add_argument("--step-split", action="store_true",
                   help="host time per DeepSpeed optimizer method (peers/ds_split.py) in the JSON line")
    p.add_argument("--ds-counts", action="store_true",
                   help="DeepSpeed's fetch/release and gradient paths counted and timed per step "
                        "(peers/ds_counts.py) in the JSON line")
    p.add_argument("--profile-steps", type=int, default=0,
                   help="after the timed steps, N more under torch.profiler (not in the median)")
    p.add_argument("--profile-out", help="where the profiled steps' Chrome-trace JSON goes (.json or .json.gz)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: DeepSpeed's CPU accelerator with gloo, for checking the harness without a GPU")
    p.add_argument("--dry-run", action="store_true",
                   help="build the model on the meta device, resolve the config, print a dry_run line, stop")
    p.add_argument("--self-test", action="store_true",
                   help="run the harness's checks on the host (peers/ds_selftest.py) and exit")
    p.add_argument("--tag", help="a name for this run, copied into the JSON line (a plan's run name)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--world-size", type=int, default=int(os.environ.get("WORLD_SIZE", "1")),
                   help="data-parallel GPUs, one process each (default: $WORLD_SIZE or 1)")
    a = p.parse_args(argv)
    if a.self_test:
        return a
    problems = check_shape_flags(a) if not a.hf_config else check_hf_flags(a)
    for name in ("seq", "micro_batch", "gas", "steps", "world_size"):
        if getattr(a, name) <= 0:
            problems.append(f"--{name.replace('_', '-')} must be positive, got {getattr(a, name)}")
    if a.warmup < 0:
        problems.append(f"--warmup must be >= 0, got {a.warmup}")
    if a.steps <= a.warmup:
        problems.append(f"--steps {a.steps} leaves no step after the {a.warmup} warm-up steps")
    if a.no_deepspeed == bool(a.ds_config):
        problems.append("give exactly one of --ds-config FILE and --no-deepspeed")
    if a.world_size > 1 and a.no_deepspeed:
        problems.append(f"--world-size {a.world_size} is for DeepSpeed (--no-deepspeed runs one GPU)")
    if a.profile_steps < 0 or (a.profile_steps > 0) != bool(a.profile_out):
        problems.append("--profile-steps N (N > 0) and --profile-out FILE go together")
    if a.device == "cpu" and (a.world_size > 1 or a.no_deepspeed or a.nvtx or a.attention == "flash"):
        problems.append("--device cpu runs one DeepSpeed process without --nvtx or --attention flash")
    if problems:
        p.error("; ".join(problems))
    return a


def check_shape_flags(a):
    """The own-module mode: --family and the shape flags."""
    problems = []
    if not a.family:
        return ["give --hf-config FILE or --family with the shape flags"]
    for name in ("layers", "hidden", "heads", "vocab"):
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
    for flag, bad in (("--dtype", a.dtype), ("--grad-ckpt", a.grad_ckpt != "none"),
                      ("--attention eager/sdpa", a.attention in ("eager", "sdpa"))):
        if bad:
            problems.append(f"{flag} is for --hf-config models")
    return problems


def check_hf_flags(a):
    """--hf-config: the file has the shape; the shape flags would only disagree with it."""
    problems = []
    if a.family:
        problems.append("give --hf-config or --family, not both")
    given = [f"--{n.replace('_', '-')}" for n in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab",
                                                  "max_positions") if getattr(a, n)]
    if a.tied_head:
        given.append("--tied-head")
    if given:
        problems.append(f"{', '.join(given)}: the shape comes from --hf-config")
    if a.no_deepspeed:
        problems.append("--hf-config measures DeepSpeed: give --ds-config")
    return problems


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
    """Parameters of the own modules (stage 3 partitions: numel() is the local shard)."""
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


class Device:
    """The accelerator the steps run on: synchronize, peak memory, name, random batches.
    sync is taken before peers/ds_counts.py wraps torch.cuda.synchronize, so the harness's
    own synchronizations around a step are not counted as DeepSpeed's. On the host
    (--device cpu) there is nothing to synchronize and no device memory to report (0)."""

    def __init__(self, torch, kind):
        self.torch, self.kind = torch, kind
        self.sync = torch.cuda.synchronize if kind == "cuda" else (lambda: None)

    def peak_gib(self):
        c = self.torch.cuda
        return (c.max_memory_allocated() / 2**30, c.max_memory_reserved() / 2**30) if self.kind == "cuda" else (0.0, 0.0)

    def reset_peak(self):
        if self.kind == "cuda":
            self.torch.cuda.reset_peak_memory_stats()

    def name(self):
        return self.torch.cuda.get_device_name() if self.kind == "cuda" else "cpu"

    def nvtx_push(self, label):
        self.torch.cuda.nvtx.range_push(label)

    def nvtx_pop(self):
        self.torch.cuda.nvtx.range_pop()


class Phases:
    """Host wall time per phase, optional NVTX range and synchronize."""

    def __init__(self, dev, nvtx, sync):
        self.dev, self.nvtx, self.sync = dev, nvtx, sync
        self.ms = {}

    def run(self, name, label, fn):
        if self.nvtx:
            self.dev.nvtx_push(label)
        t0 = time.perf_counter()
        out = fn()
        if self.sync:
            self.dev.sync()
        self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - t0) * 1e3
        if self.nvtx:
            self.dev.nvtx_pop()
        return out


def run_steps(torch, dev, a, nsteps, m, after_step=None, counts=None, first=0):
    """Time nsteps steps; returns (per-step ms, per-step phase dicts, per-step loss scaler
    state). m is what setup_* returned: fwd(batch) -> loss, bwd(loss), step(), every_micro.

    DeepSpeed wants engine.step() after every micro batch (it counts micro steps to find the
    accumulation boundary and only updates there); plain PyTorch steps once per step."""
    gen = torch.Generator(device=dev.kind)
    gen.manual_seed(a.seed + first + int(os.environ.get("RANK", "0")))  # each rank its own batches
    width = a.seq + (0 if a.hf_config else 1)  # HF models shift the labels themselves
    steps_ms, phases, scaler = [], [], []
    for i in range(first, first + nsteps):
        ph = Phases(dev, a.nvtx, a.phase_sync)
        batches = [torch.randint(m["vocab"], (a.micro_batch, width), device=dev.kind, generator=gen)
                   for _ in range(a.gas)]
        dev.sync()
        if a.nvtx:
            dev.nvtx_push(f"step {i}")
        if counts:
            counts.begin_step()
        t0 = time.perf_counter()
        for j, b in enumerate(batches):
            loss = ph.run("fwd", "forward", lambda: m["fwd"](b))
            ph.run("bwd", "backward", lambda: m["bwd"](loss))
            if m["every_micro"] or j == a.gas - 1:
                ph.run("step", "optimizer", m["step"])
        dev.sync()
        steps_ms.append((time.perf_counter() - t0) * 1e3)
        if counts:
            counts.end_step()
        if a.nvtx:
            dev.nvtx_pop()
        phases.append(ph.ms)
        scaler.append(m["scaler"]())
        if after_step:
            after_step(ph.ms.get("step", 0.0))
        if not torch.isfinite(loss.detach().float()):
            raise SystemExit(f"ds_step: loss is {loss.item()} at step {i}")
        print(f"ds_step: step {i} {steps_ms[-1]:.1f} ms loss {loss.item():.3f}", file=sys.stderr)
    return steps_ms, phases, scaler


def scaler_state(engine):
    """fp16: (overflow of the step just taken, loss scale); bf16: (None, None)."""
    o = engine.optimizer
    if not engine.fp16_enabled():
        return None, None
    scale = getattr(o, "loss_scale", None)
    return bool(getattr(o, "overflow", False)), float(scale) if scale is not None else None


def setup_deepspeed(torch, dev, a, build_net):
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
    info = {"deepspeed": deepspeed.__version__, "zero_stage": stage, "zero_init": zero_init,
            "params": count_params(model)}
    m = {"fwd": engine, "bwd": engine.backward, "step": engine.step, "every_micro": True, "vocab": a.vocab,
         "scaler": lambda: scaler_state(engine)}
    return engine, info, m


def setup_torch(torch, dev, a, build_net):
    model = make_loss_module(torch, build_net(), a.loss_dtype == "fp32").cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)

    def fwd(b):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return model(b) / a.gas

    def step():
        opt.step()
        opt.zero_grad(set_to_none=True)

    info = {"deepspeed": None, "zero_stage": None, "zero_init": False, "params": count_params(model)}
    return model, info, {"fwd": fwd, "bwd": lambda l: l.backward(), "step": step, "every_micro": False,
                         "vocab": a.vocab, "scaler": lambda: (None, None)}


def load_json_object(path, what):
    try:
        with open(path) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"ds_step: cannot read {what} {path}: {e}")
    if not isinstance(cfg, dict):
        raise SystemExit(f"ds_step: {what} {path} is not a JSON object")
    return cfg


def setup_hf(torch, dev, a):
    """A Hugging Face model under DeepSpeed as the Trainer sets it up (peers/hf_model.py)."""
    import deepspeed
    import hf_model  # peers/hf_model.py, next to this script
    hf_model.quiet_transformers()
    if dev.kind == "cpu" and not torch.distributed.is_initialized():
        deepspeed.init_distributed(dist_backend="gloo")
    try:
        cfg = hf_model.read_config_json(a.hf_config)
        ds = load_json_object(a.ds_config, "DeepSpeed config")
        dtype = hf_model.pick_dtype(ds, a.dtype)
        hfds, targs, overrides = hf_model.begin_resolve(ds, a.micro_batch, a.gas, a.world_size, dtype)
        zero3 = hfds.is_zero3()
        init = a.init_device if dev.kind == "cuda" else "cpu"
        model, hfc, where = hf_model.build(torch, cfg, a.attention, init, zero3)
        shape = hf_model.shape_of(hfc)
        if shape["max_positions"] and a.seq > shape["max_positions"]:
            raise hf_model.HfConfigError(f"--seq {a.seq} exceeds the model's {shape['max_positions']} positions")
        hf_model.grad_checkpointing(model, a.grad_ckpt)
        model.train()
        resolved, auto_left = hf_model.finish_resolve(hfds, targs, model, a.steps + a.profile_steps)
    except hf_model.HfConfigError as e:
        raise SystemExit(f"ds_step: {e}")
    params, params_hf = hf_model.count_params(model)
    zero_init = hf_model.zero_init_used(model)
    if zero3 and not zero_init:
        raise SystemExit("ds_step: ZeRO-3 but from_config did not build the model inside zero.Init")
    init_peak = dev.peak_gib()[0]
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=[p for p in model.parameters()
                                                                           if p.requires_grad],
                                           config=copy.deepcopy(resolved))
    info = {"deepspeed": deepspeed.__version__, "zero_stage": int(resolved.get("zero_optimization", {})
                                                                   .get("stage", 0)),
            "zero_init": zero_init, "params": params, "params_hf": params_hf, "init": where,
            "model_type": cfg["model_type"], "hf_class": type(model).__name__, "dtype": dtype,
            "attn_implementation": hf_model.attn_implementation(a.attention),
            "ds_config_resolved": resolved, "batch_overrides": overrides, "auto_left": auto_left, "shape": shape,
            "gpu_build_peak_GiB": init_peak, "gpu_init_peak_GiB": dev.peak_gib()[0],
            "versions": hf_model.environment_versions()}
    # the training peak: the fp32 build and DeepSpeed's set-up are in gpu_init_peak_GiB
    dev.reset_peak()
    only_flash = contextlib.nullcontext
    if a.attention == "flash":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        only_flash = lambda: sdpa_kernel([SDPBackend.FLASH_ATTENTION])  # noqa: E731

    def fwd(b):
        with only_flash():
            return engine(input_ids=b, labels=b).loss

    m = {"fwd": fwd, "bwd": engine.backward, "step": engine.step, "every_micro": True,
         "vocab": shape["vocab"], "scaler": lambda: scaler_state(engine)}
    return engine, info, m


def dry_run(torch, a):
    """Build on the meta device, resolve "auto", print a line marked dry_run: what the
    run would be, checked without a GPU or memory. The loop does not run."""
    import hf_model
    hf_model.quiet_transformers()
    try:
        cfg = hf_model.read_config_json(a.hf_config)
        ds = load_json_object(a.ds_config, "DeepSpeed config")
        dtype = hf_model.pick_dtype(ds, a.dtype)
        hfds, targs, overrides = hf_model.begin_resolve(ds, a.micro_batch, a.gas, a.world_size, dtype)
        hf_model.unset_zero3()  # on the meta device: no zero.Init
        with torch.device("meta"):
            model, hfc, _ = hf_model.build(torch, cfg, a.attention, "meta", False)
        shape = hf_model.shape_of(hfc)
        if shape["max_positions"] and a.seq > shape["max_positions"]:
            raise hf_model.HfConfigError(f"--seq {a.seq} exceeds the model's {shape['max_positions']} positions")
        hf_model.grad_checkpointing(model, a.grad_ckpt)
        resolved, auto_left = hf_model.finish_resolve(hfds, targs, model, a.steps + a.profile_steps)
    except hf_model.HfConfigError as e:
        raise SystemExit(f"ds_step: {e}")
    params, _ = hf_model.count_params(model)
    out = {"harness": "ds_step", "format": 2, "dry_run": True, "hf_config": a.hf_config,
           "config": os.path.splitext(os.path.basename(a.ds_config))[0], "ds_config": a.ds_config,
           "model_type": cfg["model_type"], "hf_class": type(model).__name__, "params": params, "dtype": dtype,
           "seq": a.seq, "micro_batch": a.micro_batch, "gas": a.gas, "grad_ckpt": a.grad_ckpt,
           "ds_config_resolved": resolved, "batch_overrides": overrides, "auto_left": auto_left, "tag": a.tag}
    out.update({k: shape[k] for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "tied_head")})
    print(json.dumps(out), flush=True)


def profile_steps(torch, dev, a, m, first):
    """a.profile_steps more steps under torch.profiler (CPU and CUDA activity), written as a
    Chrome trace to a.profile_out (gzip when it ends in .gz). Returns their step times."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.kind == "cuda" else [])
    with profile(activities=acts) as prof:
        steps_ms, _, _ = run_steps(torch, dev, a, a.profile_steps, m, first=first)
    prof.export_chrome_trace(a.profile_out)
    return {"steps": a.profile_steps, "path": a.profile_out, "steps_ms": [round(t, 3) for t in steps_ms],
            "bytes": os.path.getsize(a.profile_out)}


def median_phase(phases, name):
    return statistics.median(p.get(name, 0.0) for p in phases)


def shape_fields(a, info):
    if a.hf_config:
        s = info["shape"]
        return {"model_source": "hf", "hf_config": a.hf_config, "model_type": info["model_type"],
                "hf_class": info["hf_class"], "family": info["model_type"],
                **{k: s[k] for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "tied_head")}}
    return {"model_source": "harness", "family": a.family, "layers": a.layers, "hidden": a.hidden,
            "heads": a.heads, "kv_heads": a.kv_heads, "tied_head": a.family == "gpt" or a.tied_head,
            "ffn": a.ffn, "vocab": a.vocab}


def make_result(torch, dev, a, info, steps_ms, phases, scaler):
    timed, timed_ph = steps_ms[a.warmup:], phases[a.warmup:]
    peak, reserved = dev.peak_gib()
    result = {"harness": "ds_step", "format": 2,
              "config": os.path.splitext(os.path.basename(a.ds_config))[0] if a.ds_config else "torch",
              "ds_config": a.ds_config}
    result.update(shape_fields(a, info))
    result.update({
        "seq": a.seq, "micro_batch": a.micro_batch, "gas": a.gas, "steps": a.steps, "warmup_steps": a.warmup,
        "loss_dtype": a.loss_dtype, "phase_sync": a.phase_sync, "attention": a.attention,
        "params": info["params"],
        "step_ms": statistics.median(timed),
        "steps_ms": [round(t, 3) for t in steps_ms],
        "fwd_ms": median_phase(timed_ph, "fwd"), "bwd_ms": median_phase(timed_ph, "bwd"),
        "opt_ms": median_phase(timed_ph, "step"),
        "gpu_peak_GiB": peak, "gpu_reserved_GiB": reserved,
        "host_rss_GiB": host_peak_rss_gib(),
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "cuda": torch.version.cuda, "deepspeed": info["deepspeed"], "gpu": dev.name(),
                     **info.get("versions", {})},
        "zero_stage": info["zero_stage"], "zero_init": info["zero_init"], "device": dev.kind, "tag": a.tag,
        "host": socket.gethostname(), "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    if a.hf_config:
        for k in ("params_hf", "init", "dtype", "attn_implementation", "ds_config_resolved", "batch_overrides",
                  "auto_left", "gpu_build_peak_GiB", "gpu_init_peak_GiB"):
            result[k] = info[k]
        result["grad_ckpt"] = a.grad_ckpt
    if any(o is not None for o, _ in scaler):
        result["overflow"] = [o for o, _ in scaler]
        result["loss_scale"] = [s for _, s in scaler]
        result["overflow_steps_timed"] = sum(1 for o, _ in scaler[a.warmup:] if o)
    return result


def main(argv):
    a = parse_args(argv)
    if a.self_test:
        import ds_selftest  # peers/ds_selftest.py, next to this script
        sys.exit(ds_selftest.main(os.path.abspath(__file__)))
    if a.world_size > 1 and "RANK" not in os.environ:
        sys.exit(launch_ranks(a, argv))
    if a.world_size != int(os.environ.get("WORLD_SIZE", "1")):
        raise SystemExit(f"ds_step: --world-size {a.world_size} but WORLD_SIZE={os.environ.get('WORLD_SIZE')}")
    single_process_env()
    if a.device == "cpu":
        os.environ["DS_ACCELERATOR"] = "cpu"  # read when deepspeed is first imported
    import torch
    if a.dry_run:
        if not a.hf_config:
            raise SystemExit("ds_step: --dry-run is for --hf-config models")
        return dry_run(torch, a)
    if a.device == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("ds_step: no CUDA device visible to PyTorch")
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dev = Device(torch, a.device)
    torch.manual_seed(a.seed)
    counts = None
    if a.ds_counts:
        from ds_counts import Counts  # peers/ds_counts.py; wraps the classes before the model exists
        counts = Counts(torch)
    if a.hf_config:
        engine, info, m = setup_hf(torch, dev, a)
    else:
        Gpt, Llama = build_model_classes(torch, a.attention)
        build_net = (lambda: Gpt(a)) if a.family == "gpt" else (lambda: Llama(a))
        engine, info, m = (setup_torch if a.no_deepspeed else setup_deepspeed)(torch, dev, a, build_net)
    split = None
    if a.step_split and info["zero_stage"] in (1, 2, 3):
        from ds_split import Split  # peers/ds_split.py, next to this script
        split = Split(engine.optimizer, torch)
    steps_ms, phases, scaler = run_steps(torch, dev, a, a.steps, m, split.end_step if split else None, counts)
    result = make_result(torch, dev, a, info, steps_ms, phases, scaler)
    result["world_size"] = a.world_size
    if split:
        result.update(split.result(a.warmup))
    if counts:
        result.update(counts.result(a.warmup))
    if a.profile_steps:
        result["profile"] = profile_steps(torch, dev, a, m, a.steps)
    if getattr(engine, "skipped_steps", None) is not None:
        result["skipped_steps"] = int(engine.skipped_steps)
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
