"""ds_step.py --self-test: the harness's Hugging Face mode checked on the host, without a GPU.

1. "auto" as the Trainer resolves it (transformers' HfTrainerDeepSpeedConfig through
   peers/hf_model.py) against the values written out by hand for Llama 3.2 1B (hidden 2048).
2. Every run of the measurement plan (peers/plans/*.jsonl) dry-run in this process: its
   model built on the meta device, its config resolved, the parameter count as the plan
   says, its flags accepted by ds_step's parser.
3. Real DeepSpeed steps on the host (--device cpu: DeepSpeed's CPU accelerator, gloo), one
   process each, on shrunken versions of the plan's families (the same config.json keys,
   2 layers of width 64): ZeRO-3 with parameter and optimizer offload under --ds-counts
   and --profile-steps, ZeRO-2 offload with gas 2 and gradient checkpointing, Twin-Flow;
   their JSON lines checked field by field (the counts against the model: one gradient
   hook per parameter tensor per micro-step, fetches in both passes, ...).
fp16 is not run (DeepSpeed's CPU accelerator refuses it): its "auto" resolution is checked
in 1 and its loss-scaler read-out against a stand-in optimizer.

Prints one "ok"/"FAIL" line per check and "N passed, M failed" last; exit 1 on a failure."""
import contextlib
import copy
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, what, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {what}")
        else:
            self.failed += 1
            print(f"FAIL {what}{': ' + detail if detail else ''}")
        sys.stdout.flush()
        return ok


def check_auto(c):
    import hf_model
    import torch
    from transformers import AutoModelForCausalLM
    ds = json.load(open(os.path.join(HERE, "configs", "hf-z3-tut.json")))
    hf, args, over = hf_model.begin_resolve(ds, 4, 8, 1, "fp16")
    hf_model.unset_zero3()
    cfg = hf_model.read_config_json(os.path.join(HERE, "models", "llama-3.2-1b.json"))
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf_model.auto_config(cfg))
    r, left = hf_model.finish_resolve(hf, args, model, 10)
    c.check("auto: nothing left \"auto\" in a stage-3 config", left == [], repr(left))
    z = r["zero_optimization"]
    want = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8, "train_batch_size": 32,
            "gradient_clipping": 1.0}
    c.check("auto: batch keys and clipping as the Trainer fills them",
            all(r[k] == v for k, v in want.items()), json.dumps({k: r[k] for k in want}))
    c.check("auto: reduce_bucket_size = hidden^2, prefetch = int(0.9 hidden^2), persistence = 10 hidden",
            (z["reduce_bucket_size"], z["stage3_prefetch_bucket_size"], z["stage3_param_persistence_threshold"])
            == (2048 * 2048, int(0.9 * 2048 * 2048), 20480), json.dumps(z))
    p = r["optimizer"]["params"]
    c.check("auto: optimizer at the Trainer's defaults",
            (p["lr"], p["betas"], p["eps"], p["weight_decay"]) == (5e-5, [0.9, 0.999], 1e-8, 0.0), json.dumps(p))
    c.check("auto: fp16 on, bf16 off for --dtype fp16; scheduler filled",
            r["fp16"]["enabled"] is True and r["bf16"]["enabled"] is False
            and r["scheduler"]["params"] == {"warmup_min_lr": 0, "warmup_max_lr": 5e-5, "warmup_num_steps": 1},
            json.dumps([r["fp16"], r["bf16"], r["scheduler"]]))
    fixed = dict(ds, train_micro_batch_size_per_gpu=16)
    _, _, over = hf_model.begin_resolve(fixed, 4, 1, 1, "bf16")
    hf_model.unset_zero3()
    c.check("auto: a fixed batch key gives way to the flags and is listed", over ==
            ["train_micro_batch_size_per_gpu 16 -> 4"], repr(over))
    for bad, why in (({k: v for k, v in ds.items() if k != "optimizer"}, "no \"optimizer\" section"),
                     (dict(ds, fp16={"enabled": True}), "--dtype bf16 but the DeepSpeed config enables fp16")):
        try:
            d = hf_model.pick_dtype(bad, "bf16")
            hf_model.begin_resolve(bad, 4, 1, 1, d)
            c.check(f"auto: refused: {why}", False, "accepted")
        except hf_model.HfConfigError as e:
            c.check(f"auto: refused: {why}", why in str(e), str(e))
        hf_model.unset_zero3()


def check_scaler(c):
    import ds_step

    class Opt:
        overflow, loss_scale = True, 32768.0

    class Eng:
        optimizer = Opt()

        def __init__(self, fp16):
            self.fp16 = fp16

        def fp16_enabled(self):
            return self.fp16

    c.check("fp16 loss scaler read-out: (overflow, scale); bf16: none",
            ds_step.scaler_state(Eng(True)) == (True, 32768.0) and ds_step.scaler_state(Eng(False)) == (None, None))


def check_sync_wrappers(c):
    """The synchronization counters on a stand-in torch.cuda (no GPU here): counted only
    inside a step, the call still made, Tensor.item counted for device tensors only."""
    import types
    import ds_counts
    made = []

    class Stream:
        def synchronize(self):
            made.append("stream")

    class Event:
        def synchronize(self):
            made.append("event")

    class Tensor:
        def __init__(self, dev):
            self.device = types.SimpleNamespace(type=dev)

        def item(self):
            return 7

    cuda = types.SimpleNamespace(is_available=lambda: True, Stream=Stream, Event=Event,
                                 synchronize=lambda *a: made.append("device"))
    fake = types.SimpleNamespace(cuda=cuda, Tensor=Tensor)
    k = ds_counts.Counts(fake, targets=[])
    cuda.synchronize()  # outside a step: made, not counted
    k.begin_step()
    Stream().synchronize()
    Event().synchronize()
    Event().synchronize()
    cuda.synchronize(0)
    items = (Tensor("cuda").item(), Tensor("cpu").item())
    k.end_step()
    r = k.result(0)["ds_counts"]
    c.check("sync counters: stream, event, device syncs and device .item() counted in the step only",
            made == ["device", "stream", "event", "event", "device"] and items == (7, 7)
            and (r.get("sync_stream_calls"), r.get("sync_event_calls"), r.get("sync_device_calls"),
                 r.get("item_calls")) == (1, 2, 1, 1), f"{made} {r}")


def plan_files():
    d = os.path.join(HERE, "plans")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".jsonl")) if os.path.isdir(d) else []


def check_plan(c):
    import ds_step
    import torch
    for path in plan_files():
        runs = [json.loads(l) for l in open(path) if l.strip()]
        for run in runs:
            argv = run["args"]
            try:
                a = ds_step.parse_args(argv + ["--dry-run"])
                buf = io.StringIO()
                with contextlib.redirect_stdout(buf):
                    ds_step.dry_run(torch, a)
                line = json.loads(buf.getvalue().strip().splitlines()[-1])
                want = run.get("params")
                ok = line["dry_run"] and (want is None or line["params"] == want)
                c.check(f"plan {os.path.basename(path)} {run['name']}: dry run", ok,
                        f"params {line['params']} != {want}")
            except SystemExit as e:
                c.check(f"plan {os.path.basename(path)} {run['name']}: dry run", False, f"exit: {e}")
            finally:
                import hf_model
                hf_model.unset_zero3()


def tiny(model_file, out_dir):
    """The family of model_file shrunk to 2 layers of width 64, 4 heads (2 key/value heads
    where the family groups them), vocabulary 512: the same config.json keys otherwise."""
    cfg = {k: v for k, v in json.load(open(model_file)).items() if not k.startswith("_")}
    if "n_embd" in cfg:  # GPT-2's own names
        cfg.update(n_embd=64, n_layer=2, n_head=4, n_inner=None)
    else:
        grouped = cfg.get("num_key_value_heads", cfg["num_attention_heads"]) != cfg["num_attention_heads"]
        cfg.update(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)
        if "num_key_value_heads" in cfg:
            cfg["num_key_value_heads"] = 2 if grouped else 4
    cfg["vocab_size"] = 512
    cfg.update(pad_token_id=0, bos_token_id=1, eos_token_id=2)  # the families' defaults (Phi-3: 32000) lie past 512
    for k in ("max_position_embeddings", "n_positions", "original_max_position_embeddings"):
        if k in cfg:
            cfg[k] = 256
    if cfg.get("sliding_window"):
        cfg["sliding_window"] = 255
    path = os.path.join(out_dir, "tiny-" + os.path.basename(model_file))
    json.dump(cfg, open(path, "w"))
    return path


def run_cpu(argv, timeout=240):
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT"):
        env.pop(k, None)
    p = subprocess.run([sys.executable, os.path.join(HERE, "ds_step.py")] + argv + ["--device", "cpu"],
                       capture_output=True, text=True, timeout=timeout, env=env)
    lines = [l for l in p.stdout.splitlines() if l.startswith('{"harness": "ds_step"')]
    tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
    return p.returncode, json.loads(lines[-1]) if lines else None, tail


def param_tensors(model_file):
    import hf_model
    import torch
    from transformers import AutoModelForCausalLM
    with torch.device("meta"):
        m = AutoModelForCausalLM.from_config(hf_model.auto_config(hf_model.read_config_json(model_file)))
    return len(list(m.parameters())), m.num_parameters()


def check_cpu_runs(c, tmp):
    models = {name: tiny(os.path.join(HERE, "models", name + ".json"), tmp)
              for name in ("llama-3.2-1b", "gpt2-large", "qwen2.5-0.5b", "pythia-1b", "phi3-mini-16l")}
    cfgdir = os.path.join(HERE, "configs")
    common = ["--seq", "32", "--micro-batch", "2", "--steps", "3", "--warmup", "1", "--dtype", "bf16"]
    trace = os.path.join(tmp, "trace.json.gz")
    # ZeRO-3, parameters and optimizer offloaded (the tutorial config), counts, a profiled step
    rc, r, tail = run_cpu(["--hf-config", models["llama-3.2-1b"], "--ds-config", os.path.join(cfgdir, "hf-z3-tut.json"),
                           "--gas", "2", "--ds-counts", "--profile-steps", "1", "--profile-out", trace] + common)
    if c.check("cpu: llama ZeRO-3 offload_param, gas 2, --ds-counts, --profile-steps 1", rc == 0 and r, tail):
        n_tensors, n_params = param_tensors(models["llama-3.2-1b"])
        k = r["ds_counts"]
        c.check("cpu: the line: 3 steps, 1 warm-up, stage 3 under zero.Init, real parameter count",
                len(r["steps_ms"]) == 3 and r["warmup_steps"] == 1 and r["zero_stage"] == 3 and r["zero_init"]
                and r["params"] == n_params and r["params_hf"] == 0 and r["init"] == "zero.Init", json.dumps(
                    {x: r.get(x) for x in ("steps_ms", "warmup_steps", "zero_stage", "zero_init", "params",
                                           "params_hf")}) + f" want params {n_params}")
        c.check("cpu: one gradient hook per parameter tensor per micro-step",
                k.get("grad_hook_calls") == 2 * n_tensors, f"{k.get('grad_hook_calls')} != 2 x {n_tensors}")
        c.check("cpu: fetches in forward and backward, gathers from host memory, releases",
                k.get("fetch_fwd_calls", 0) > 0 and k.get("fetch_bwd_calls", 0) > 0
                and k.get("gather_host_bytes", 0) > 0 and k.get("release_params", 0) > 0
                and k.get("fetch_fwd_s", 0) > 0, json.dumps({x: k.get(x) for x in (
                    "fetch_fwd_calls", "fetch_bwd_calls", "gather_host_bytes", "release_params")}))
        c.check("cpu: gradients offloaded once per step (at the boundary), optimizer once",
                k.get("grad_offload_calls") == n_tensors and k.get("optimizer_step_calls") == 1,
                f"{k.get('grad_offload_calls')} vs {n_tensors} tensors, {k.get('optimizer_step_calls')}")
        c.check("cpu: counts of every step and no wrapped name missing",
                len(r["ds_counts_steps"]) == 3 and r["ds_counts_missing"] == [], repr(r["ds_counts_missing"]))
        try:
            with gzip.open(trace, "rt") as f:
                ev = json.load(f).get("traceEvents", [])
            ok = len(ev) > 100 and r["profile"]["steps"] == 1
        except (OSError, ValueError) as e:
            ok, ev = False, str(e)
        c.check("cpu: the profiled step is a Chrome trace (gzip JSON with traceEvents)", ok, str(len(ev)))
    # ZeRO-2 optimizer offload, gas 2, HF gradient checkpointing (GPT-2: dropout, tied head)
    rc, r, tail = run_cpu(["--hf-config", models["gpt2-large"], "--ds-config", os.path.join(cfgdir, "hf-z2-off.json"),
                           "--gas", "2", "--ds-counts", "--grad-ckpt", "gpu"] + common)
    if c.check("cpu: gpt2 ZeRO-2 offload, gas 2, gradient checkpointing", rc == 0 and r, tail):
        n_tensors, n_params = param_tensors(models["gpt2-large"])
        k = r["ds_counts"]
        c.check("cpu: ZeRO-2: a gradient hook per tensor per micro-step, CPU accumulation between",
                k.get("grad_hook_calls") == 2 * n_tensors and k.get("grad_cpu_accumulate_calls", 0) > 0
                and k.get("fetch_fwd_calls") is None and r["params"] == n_params == r["params_hf"],
                json.dumps({x: k.get(x) for x in ("grad_hook_calls", "grad_cpu_accumulate_calls")}))
        c.check("cpu: resolved config: stage 2, gas 2, bf16",
                r["ds_config_resolved"]["gradient_accumulation_steps"] == 2 and r["zero_stage"] == 2
                and r["ds_config_resolved"]["bf16"]["enabled"] is True and r["grad_ckpt"] == "gpu")
    # Twin-Flow and the other families under ZeRO-3 with zero.Init
    for name, cfg in (("qwen2.5-0.5b", "hf-z3-tf30"), ("pythia-1b", "hf-z3-off"), ("phi3-mini-16l", "hf-z3-tut")):
        rc, r, tail = run_cpu(["--hf-config", models[name], "--ds-config", os.path.join(cfgdir, cfg + ".json"),
                               "--gas", "1"] + common)
        ok = rc == 0 and r is not None
        c.check(f"cpu: {name.split('-')[0]} family, {cfg}", ok and r["zero_init"] and r["params"] ==
                param_tensors(models[name])[1], tail if not ok else json.dumps({"params": r["params"]}))


def main(ds_step_path):
    sys.path.insert(0, HERE)
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    for k, v in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1")):
        os.environ.setdefault(k, v)
    os.environ.setdefault("MASTER_PORT", "29511")
    c = Checks()
    for part in (check_auto, check_scaler, check_sync_wrappers, check_plan):
        try:
            part(c)
        except Exception as e:  # a crash is a failed check, the others still run
            c.check(part.__name__, False, f"{type(e).__name__}: {e}")
    if os.environ.get("DS_SELFTEST_NO_CPU") != "1":
        with tempfile.TemporaryDirectory() as tmp:
            try:
                check_cpu_runs(c, tmp)
            except Exception as e:
                c.check("check_cpu_runs", False, f"{type(e).__name__}: {e}")
    print(f"{c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main(os.path.join(HERE, "ds_step.py")))
