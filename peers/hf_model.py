"""ds_step.py --hf-config: a Hugging Face model from its config.json, and the DeepSpeed config
resolved the way Hugging Face's Trainer resolves it.

The model: AutoConfig.for_model(model_type, **keys) and AutoModelForCausalLM.from_config,
random weights, nothing downloaded. Keys starting with "_" (comments) are dropped. For ZeRO-3
the Trainer's path is taken: a HfTrainerDeepSpeedConfig alive while the model is built makes
from_config construct it inside deepspeed.zero.Init (parameters partitioned as they are
created, onto the host with offload_param) and initialize it module by module
(transformers.integrations.deepspeed.initialize_weights_zero3). Below stage 3 the model is
built on the GPU (--init-device cuda, default: no fp32 copy of the model in host memory or
in the host's peak resident set) or on the host as a from_pretrained user's would be.

"auto": transformers' own HfTrainerDeepSpeedConfig does it, with a stand-in for the
TrainingArguments it reads (TrainerArgs below: the harness's batch flags, the Trainer's
defaults for the rest): trainer_config_process fills train_micro_batch_size_per_gpu,
gradient_accumulation_steps, train_batch_size (world x micro x gas), gradient_clipping
(max_grad_norm 1.0), optimizer lr/betas/eps/weight_decay (5e-5, [0.9, 0.999], 1e-8, 0.0),
scheduler warmup_min_lr/warmup_max_lr, fp16/bf16.enabled from the dtype; trainer_config_finalize
fills reduce_bucket_size = hidden^2, stage3_prefetch_bucket_size = int(0.9 hidden^2),
stage3_param_persistence_threshold = 10 hidden, scheduler total_num_steps (the harness's
steps) and warmup_num_steps (warmup_steps 1: the Trainer's 0 is rejected by WarmupLR). A key that is not "auto" and disagrees with the Trainer's value is an
error there; here the harness's flags own the batch (as for the own-module mode), so
train_micro_batch_size_per_gpu, gradient_accumulation_steps and train_batch_size given as
numbers are replaced by the flags' values first and listed in "batch_overrides"."""
import copy
import json
import math
import os


class HfConfigError(Exception):
    pass


def read_config_json(path):
    """The config.json as a dict (comments dropped), model_type required."""
    try:
        with open(path) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        raise HfConfigError(f"cannot read Hugging Face config {path}: {e}")
    if not isinstance(cfg, dict):
        raise HfConfigError(f"Hugging Face config {path} is not a JSON object")
    cfg = {k: v for k, v in cfg.items() if not k.startswith("_")}
    if not isinstance(cfg.get("model_type"), str):
        raise HfConfigError(f"Hugging Face config {path} has no \"model_type\"")
    return cfg


def auto_config(cfg):
    from transformers import AutoConfig
    keys = dict(cfg)
    model_type = keys.pop("model_type")
    try:
        return AutoConfig.for_model(model_type, **keys)
    except (ValueError, KeyError) as e:
        raise HfConfigError(f"transformers does not know model_type '{model_type}': {e}")


def shape_of(hf):
    """The shape fields zbench compares (peer.c zb_peer_check_shape), from a
    PretrainedConfig: attribute_map makes num_hidden_layers etc. work for GPT-2 too."""
    hidden = hf.hidden_size
    heads = hf.num_attention_heads
    ffn = getattr(hf, "intermediate_size", None) or getattr(hf, "n_inner", None) or 4 * hidden
    kv = getattr(hf, "num_key_value_heads", None) or heads
    tied = bool(getattr(hf, "tie_word_embeddings", False))
    return {"layers": hf.num_hidden_layers, "hidden": hidden, "heads": heads, "kv_heads": kv, "ffn": ffn,
            "vocab": hf.vocab_size, "tied_head": tied,
            "max_positions": getattr(hf, "max_position_embeddings", None) or getattr(hf, "n_positions", None)}


class TrainerArgs:
    """The TrainingArguments fields HfTrainerDeepSpeedConfig reads, at the Trainer's defaults
    (transformers 5.x training_args.py) except the batch, dtype and the harness's steps."""

    def __init__(self, micro_batch, gas, world_size, dtype):
        self.world_size = world_size
        self.per_device_train_batch_size = micro_batch
        self.gradient_accumulation_steps = gas
        self.max_grad_norm = 1.0
        self.learning_rate = 5e-5
        self.adam_beta1, self.adam_beta2, self.adam_epsilon = 0.9, 0.999, 1e-8
        self.weight_decay = 0.0
        self.save_on_each_node = False
        self.fp16, self.bf16 = dtype == "fp16", dtype == "bf16"
        self.fp16_full_eval = self.bf16_full_eval = False
        # the Trainer's default is 0, which DeepSpeed 0.19.8's WarmupLR rejects
        # ("warmup_num_steps must be a positive integer"): a Trainer user sets it
        self.warmup_steps = 1

    def get_warmup_steps(self, num_training_steps):
        w = self.warmup_steps
        return int(w) if w >= 1 else math.ceil(num_training_steps * w)


BATCH_KEYS = ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "train_batch_size")


def config_dtype(ds):
    """'fp16', 'bf16', 'auto' (a section says "auto") or None (neither enabled)."""
    for name in ("fp16", "bf16"):
        v = (ds.get(name) or {}).get("enabled")
        if v is True:
            return name
    for name in ("fp16", "bf16"):
        if (ds.get(name) or {}).get("enabled") == "auto":
            return "auto"
    return None


def pick_dtype(ds, flag):
    """The precision the run uses: --dtype, else the config's."""
    in_file = config_dtype(ds)
    if flag:
        if in_file in ("fp16", "bf16") and in_file != flag:
            raise HfConfigError(f"--dtype {flag} but the DeepSpeed config enables {in_file}")
        return flag
    if in_file in ("fp16", "bf16"):
        return in_file
    if in_file == "auto":
        raise HfConfigError("the DeepSpeed config's precision is \"auto\": give --dtype bf16 or --dtype fp16")
    raise HfConfigError("the DeepSpeed config enables neither bf16 nor fp16 (fp32 training is not measured)")


def begin_resolve(ds, micro_batch, gas, world_size, dtype):
    """Trainer step one (TrainingArguments creation): returns (HfTrainerDeepSpeedConfig, args,
    overrides). The object must stay alive while the model is built: it is what tells
    from_config to use zero.Init."""
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig
    ds = copy.deepcopy(ds)
    overrides = []
    want = {"train_micro_batch_size_per_gpu": micro_batch, "gradient_accumulation_steps": gas,
            "train_batch_size": micro_batch * gas * world_size}
    for k in BATCH_KEYS:
        if k in ds and ds[k] != "auto" and ds[k] != want[k]:
            overrides.append(f"{k} {ds[k]} -> {want[k]}")
            ds[k] = want[k]
    if "optimizer" not in ds:
        raise HfConfigError("the DeepSpeed config has no \"optimizer\" section (the Trainer would create "
                            "torch AdamW itself; the harness measures DeepSpeed's optimizers)")
    ds.setdefault("steps_per_print", 1 << 30)
    hf = HfTrainerDeepSpeedConfig(ds)
    args = TrainerArgs(micro_batch, gas, world_size, dtype)
    hf.trainer_config_process(args)
    return hf, args, overrides


def finish_resolve(hf, args, model, steps):
    """Trainer step two (deepspeed_init): the hidden-size keys and the scheduler's steps.
    Returns (config, keys still "auto"): the Trainer passes those on to DeepSpeed as they
    are (stage3_* keys in a stage-2 config, which DeepSpeed ignores), and so does this."""
    hf.trainer_config_finalize(args, model, steps)
    return hf.config, find_auto(hf.config)


def find_auto(node, path=""):
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in find_auto(v, f"{path}.{k}" if path else k)]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in find_auto(v, f"{path}[{i}]")]
    return [path] if node == "auto" else []


def unset_zero3():
    """Forget the HfTrainerDeepSpeedConfig's global reference: from_config then builds
    without zero.Init (the dry run builds on the meta device)."""
    from transformers.integrations.deepspeed import unset_hf_deepspeed_config
    unset_hf_deepspeed_config()


def attn_implementation(attention):
    """--attention as Hugging Face's attn_implementation (flash: SDPA held to its flash
    kernel by ds_step's sdpa_kernel context, so no flash-attn package is needed)."""
    return {"auto": "sdpa", "sdpa": "sdpa", "flash": "sdpa", "eager": "eager"}.get(attention, attention)


def build(torch, cfg, attention, init_device, zero3):
    """The model from the config dict: (model, PretrainedConfig, how it was built)."""
    from transformers import AutoModelForCausalLM
    hf = auto_config(cfg)
    hf.use_cache = False
    impl = attn_implementation(attention)
    if zero3:
        # HfTrainerDeepSpeedConfig is alive: from_config builds inside zero.Init
        model = AutoModelForCausalLM.from_config(hf, attn_implementation=impl)
        where = "zero.Init"
    elif init_device == "cuda":
        with torch.device("cuda"):
            model = AutoModelForCausalLM.from_config(hf, attn_implementation=impl)
        where = "cuda"
    else:
        model = AutoModelForCausalLM.from_config(hf, attn_implementation=impl)
        where = "cpu"
    return model, hf, where


def count_params(model):
    """(parameters, what model.num_parameters() says): under ZeRO-3 the partitioned
    parameters are empty, and ds_numel holds the real size."""
    seen, n = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            n += getattr(p, "ds_numel", p.numel())
    return n, model.num_parameters()


def zero_init_used(model):
    return all(hasattr(p, "ds_id") for p in model.parameters())


def grad_checkpointing(model, mode):
    """HF gradient checkpointing: 'gpu' keeps the checkpoints on the device, 'cpu' holds
    them in pinned host memory (gradient_checkpointing_enable(offload=True), transformers
    5.x). use_reentrant False, the Trainer's default."""
    if mode == "none":
        return
    kwargs = {"gradient_checkpointing_kwargs": {"use_reentrant": False}}
    if mode == "cpu":
        kwargs["offload"] = True
    model.gradient_checkpointing_enable(**kwargs)


def environment_versions():
    out = {}
    for name in ("transformers", "accelerate"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = None
    return out


def quiet_transformers():
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
