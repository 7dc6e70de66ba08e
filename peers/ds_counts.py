"""ds_step.py --ds-counts: how often DeepSpeed's per-module and per-tensor paths run in a step,
on how many parameters and bytes, and the host time they take.

ZeRO-3 keeps a parameter partitioned until a module needs it: a forward pre-hook calls
PartitionedParameterCoordinator.fetch_sub_module (gather the module's parameters, wait for
them, start the prefetch of the next ones by the recorded trace), a forward hook calls
release_sub_module (free them again); backward does the same in reverse through autograd
functions. On one GPU the gather is NoGatherCoalescedHandle (NoGatherHandle for a single
parameter): one `.to(device, non_blocking=True)` per parameter from its partition (pinned
host memory under offload_param), and its wait() synchronizes the gather stream. Every micro-step repeats it.
The gradients leave through per-parameter hooks: stage 3 reduce_ready_partitions_and_
remove_grads -> bucket flush (__reduce_and_partition_ipg_grads) -> partition_grads ->
_offload_grad_partition_at_boundary (norm, copy to the fp32 host buffer); stages 1-2
reduce_independent_p_g_buckets_and_remove_grads -> reduce_ipg_grads -> copy_grads_in_partition
(-> async_accumulate_grad_in_cpu_via_gpu under gas, norm, overflow check, copy down).

Counts wraps those methods on their classes (the wrapper calls the original with the same
arguments and returns its result: behaviour unchanged), before the model is built, and per
step (begin_step/end_step around the timed step) sums for each path:
  <path>_calls   calls
  <path>_s       host wall seconds inside the call (nested paths are counted in each:
                 fetch_fwd_s contains gather_s and handle_wait_s)
  <path>_params, <path>_numel, <path>_bytes   where the path moves parameters or
                 gradients: tensors, elements, bytes (at the tensor's own dtype)
plus the host-device synchronizations DeepSpeed asks for (torch.cuda.Stream.synchronize,
Event.synchronize, torch.cuda.synchronize, Tensor.item on a device tensor) as
sync_stream_calls, sync_event_calls, sync_device_calls, item_calls with their _s. The
harness's own synchronize around each step goes through an unwrapped reference and
is not counted. A name that the installed DeepSpeed lacks is listed in "missing" and
not wrapped, so a version whose methods moved says so instead of counting zeros.

Cost: two perf_counter calls and a dict update per call, ~1 us, against tens to hundreds
of microseconds of DeepSpeed's own Python per fetch."""
import statistics
import time


def _numel(t):
    return t.numel() if t is not None and hasattr(t, "numel") else 0


def _bytes(t):
    return _numel(t) * t.element_size() if t is not None and hasattr(t, "element_size") else 0


def _part(p):
    """A ZeRO-3 parameter's partition (ds_tensor) or the parameter itself."""
    return getattr(p, "ds_tensor", None) if getattr(p, "ds_tensor", None) is not None else p


# ---- what each wrapped method moves: f(self, args, kwargs) -> {suffix: amount} ------------

def _gather_params(obj, args, kwargs):
    """PartitionedParameterCoordinator.__all_gather_params(params, forward): the
    parameters still partitioned are the ones gathered (the others are in flight or here)."""
    params = args[0] if args else kwargs.get("params", ())
    todo = [p for p in params if getattr(getattr(p, "ds_status", None), "name", "") == "NOT_AVAILABLE"]
    host = [p for p in todo if _part(p).device.type == "cpu"]
    return {"params": len(todo), "numel": sum(p.ds_numel for p in todo),
            "bytes": sum(_bytes(_part(p)) for p in todo), "host_params": len(host),
            "host_bytes": sum(_bytes(_part(p)) for p in host)}


def _copies(params):
    host = [p for p in params if _part(p).device.type == "cpu"]
    return {"params": len(params), "bytes": sum(_bytes(_part(p)) for p in params), "host_params": len(host),
            "host_bytes": sum(_bytes(_part(p)) for p in host)}


def _handle_copies(obj, args, kwargs):
    """NoGatherCoalescedHandle(params): one copy per parameter from its partition (from
    pinned host memory under offload_param: host_*)."""
    return _copies(list(args[0] if args else kwargs.get("params", ())))


def _one_handle_copy(obj, args, kwargs):
    """NoGatherHandle(param): a gather of a single parameter."""
    return _copies([args[0] if args else kwargs.get("param")])


def _ds_numel(obj, args, kwargs):
    p = args[0] if args else None
    return {"numel": getattr(p, "ds_numel", _numel(p))}


def _z3_bucket(obj, args, kwargs):
    """stage 3 __reduce_and_partition_ipg_grads(dtype): the bucket it flushes."""
    buckets = getattr(obj, "ipg_buckets", {}) or {}
    b = buckets.get(args[0]) if args else None
    if b is None:
        return {}
    return {"params": len(b.params), "numel": int(b.elements)}


def _partition_grads(obj, args, kwargs):
    params = args[0] if args else ()
    parts = args[1] if len(args) > 1 else ()
    return {"params": len(params), "numel": sum(_numel(g) for g in parts)}


def _z3_offload(obj, args, kwargs):
    """stage 3 _offload_grad_partition_at_boundary(param, grad_buffer, ...): copied as fp32."""
    g = args[1] if len(args) > 1 else None
    return {"numel": _numel(g), "bytes": 4 * _numel(g)}


def _z12_param(obj, args, kwargs):
    p = args[0] if args else None
    return {"numel": _numel(p)}


def _z12_bucket(obj, args, kwargs):
    """stage 1-2 reduce_ipg_grads(comm_dtype=None): one dtype's bucket, or all of them."""
    buckets = getattr(obj, "ipg_buckets", {}) or {}
    dtype = args[0] if args else kwargs.get("comm_dtype")
    chosen = [buckets[dtype]] if dtype in buckets else list(buckets.values())
    return {"params": sum(len(b.params) for b in chosen), "numel": sum(int(b.elements) for b in chosen)}


def _tensor_numel(obj, args, kwargs):
    return {"numel": _numel(args[0]) if args else 0}


def _z12_offload(obj, args, kwargs):
    p = args[0] if args else None
    return {"numel": _numel(p), "bytes": 4 * _numel(p)}


def _pre_status(obj, args, kwargs):
    """__release_param(param): released when it was AVAILABLE before and is not after."""
    p = args[0] if args else kwargs.get("param")
    return {"_param": p, "_was": getattr(getattr(p, "ds_status", None), "name", "")}


# (module, class, method, path name, measure) - module relative to deepspeed.runtime.zero
ZERO3_PARAM = [
    ("partitioned_param_coordinator", "PartitionedParameterCoordinator", "fetch_sub_module", "fetch", None),
    ("partitioned_param_coordinator", "PartitionedParameterCoordinator", "release_sub_module", "release", None),
    ("partitioned_param_coordinator", "PartitionedParameterCoordinator",
     "_PartitionedParameterCoordinator__all_gather_params", "gather", _gather_params),
    ("partitioned_param_coordinator", "PartitionedParameterCoordinator",
     "_PartitionedParameterCoordinator__release_param", "release_param", _pre_status),
    ("partitioned_param_coordinator", "PartitionedParameterCoordinator", "reset_step", "reset_step", None),
    ("partition_parameters", "NoGatherCoalescedHandle", "__init__", "param_copy", _handle_copies),
    ("partition_parameters", "NoGatherHandle", "__init__", "param_copy", _one_handle_copy),
    ("partition_parameters", "NoGatherCoalescedHandle", "wait", "handle_wait", None),
    ("partition_parameters", "NoGatherHandle", "wait", "handle_wait", None),
    ("partition_parameters", "AllGatherCoalescedHandle", "wait", "allgather_wait", None),
    ("parameter_offload", "DeepSpeedZeRoOffload", "pre_sub_module_forward_function", "hook_pre_fwd", None),
    ("parameter_offload", "DeepSpeedZeRoOffload", "post_sub_module_forward_function", "hook_post_fwd", None),
    ("parameter_offload", "DeepSpeedZeRoOffload", "pre_sub_module_backward_function", "hook_pre_bwd", None),
    ("parameter_offload", "DeepSpeedZeRoOffload", "post_sub_module_backward_function", "hook_post_bwd", None),
]
ZERO3_GRAD = [
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "reduce_ready_partitions_and_remove_grads", "grad_hook", _ds_numel),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "_DeepSpeedZeroOptimizer_Stage3__reduce_and_partition_ipg_grads",
     "grad_bucket_flush", _z3_bucket),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "partition_grads", "grad_partition", _partition_grads),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "_offload_grad_partition_at_boundary", "grad_offload", _z3_offload),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "independent_gradient_partition_epilogue", "grad_epilogue", None),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "_finalize_offload_gradient_accumulation", "grad_finalize", None),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "step", "zero_step", None),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "_partition_all_parameters", "partition_all", None),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "_overflow_check_and_loss_scale_update", "overflow_check", None),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "_get_norm_groups", "grad_norm", None),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "_prepare_sub_group", "prepare_sub_group", None),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "unscale_and_clip_grads", "unscale_clip", None),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "_optimizer_step", "optimizer_step", None),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "_reassign_or_swap_out_partitioned_parameters",
     "param_writeback", None),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "_release_sub_group", "release_sub_group", None),
    ("stage3", "DeepSpeedZeroOptimizer_Stage3", "_post_step", "post_step", None),
]
ZERO12_GRAD = [
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "reduce_independent_p_g_buckets_and_remove_grads", "grad_hook",
     _z12_param),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "reduce_ipg_grads", "grad_bucket_flush", _z12_bucket),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "average_tensor", "grad_reduce", _tensor_numel),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "copy_grads_in_partition", "grad_copy", _z12_param),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "async_accumulate_grad_in_cpu_via_gpu", "grad_cpu_accumulate",
     _z12_param),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "async_inplace_copy_grad_to_fp32_buffer_from_gpu", "grad_offload",
     _z12_offload),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "set_norm_for_param_grad_in_gpu", "grad_norm_param", None),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "update_offload_overflow_tracker", "overflow_check_param", None),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "independent_gradient_partition_epilogue", "grad_epilogue", None),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "finalize_gradient_accumulation_boundary", "grad_finalize", None),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "step", "zero_step", None),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "_wait_for_offload_copies", "wait_offload_copies", None),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "scaled_global_norm", "grad_norm", None),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "unscale_and_clip_grads", "unscale_clip", None),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "_optimizer_step", "optimizer_step", None),
    ("stage_1_and_2", "DeepSpeedZeroOptimizer", "_update_model_bit16_weights", "param_writeback", None),
]
# the loss scaler of fp16 (fp16/loss_scaler.py): one update per step, overflow or not
LOSS_SCALER = [("deepspeed.runtime.fp16.loss_scaler", "DynamicLossScaler", "update_scale", "loss_scale_update", None)]


class Counts:
    def __init__(self, torch, cuda_syncs=True, targets=None):
        """Wrap targets (default: every list above) and, with cuda_syncs and a GPU, the
        synchronizations."""
        self.torch = torch
        self.sums = {}          # the running step's sums
        self.rows = []          # one dict per step that ended
        self.active = False     # only between begin_step and end_step
        self.wrapped, self.missing = [], []
        import importlib
        targets = ZERO3_PARAM + ZERO3_GRAD + ZERO12_GRAD + LOSS_SCALER if targets is None else targets
        for modname, cls_name, method, path, measure in targets:
            full = modname if modname.startswith("deepspeed.") else "deepspeed.runtime.zero." + modname
            try:
                cls = getattr(importlib.import_module(full), cls_name)
            except (ImportError, AttributeError):
                self.missing.append(f"{cls_name}.{method}")
                continue
            f = cls.__dict__.get(method)
            if not callable(f):
                self.missing.append(f"{cls_name}.{method}")
                continue
            setattr(cls, method, self._wrap(f, path, measure, split_forward=path in ("fetch", "release")))
            self.wrapped.append(f"{cls_name}.{method}")
        if cuda_syncs and torch.cuda.is_available():
            self._wrap_syncs(torch)

    def _add(self, key, amount):
        self.sums[key] = self.sums.get(key, 0) + amount

    def _wrap(self, f, path, measure, split_forward=False):
        counts = self

        def counted(*args, **kwargs):
            if not counts.active:
                return f(*args, **kwargs)
            name = path
            if split_forward:  # fetch_sub_module(module, forward) / release_sub_module(module, forward=False)
                fwd = args[2] if len(args) > 2 else kwargs.get("forward", False)
                name = path + ("_fwd" if fwd else "_bwd")
            extra = measure(args[0], args[1:], kwargs) if measure else {}
            t0 = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                counts._add(name + "_s", time.perf_counter() - t0)
                counts._add(name + "_calls", 1)
                if "_param" in extra:  # release: count what was really partitioned
                    p = extra["_param"]
                    if extra["_was"] == "AVAILABLE" and getattr(p.ds_status, "name", "") == "NOT_AVAILABLE":
                        counts._add(name + "s", 1)
                        counts._add(name + "s_numel", p.ds_numel)
                else:
                    for k, v in extra.items():
                        counts._add(f"{name}_{k}", v)

        counted.__wrapped__ = f
        counted.__name__ = getattr(f, "__name__", path)
        return counted

    def _wrap_syncs(self, torch):
        cuda = torch.cuda
        self.wrapped.append("torch.cuda syncs")
        cuda.Stream.synchronize = self._wrap(cuda.Stream.synchronize, "sync_stream", None)
        cuda.Event.synchronize = self._wrap(cuda.Event.synchronize, "sync_event", None)
        plain = cuda.synchronize
        wrapped = self._wrap(lambda *a, **k: plain(*a, **k), "sync_device", None)
        cuda.synchronize = wrapped
        item = torch.Tensor.item
        counts = self

        def counted_item(t):
            if counts.active and t.device.type != "cpu":
                t0 = time.perf_counter()
                try:
                    return item(t)
                finally:
                    counts._add("item_s", time.perf_counter() - t0)
                    counts._add("item_calls", 1)
            return item(t)

        torch.Tensor.item = counted_item

    def begin_step(self):
        self.sums = {}
        self.active = True

    def end_step(self):
        self.active = False
        self.rows.append(self.sums)
        self.sums = {}

    def result(self, warmup):
        """Per path the median over the steps after warm-up (counts are the same every
        step once ZeRO-3's trace is complete; times are not), rounded."""
        timed = self.rows[warmup:] or self.rows
        keys = sorted({k for r in timed for k in r})
        med = {}
        for k in keys:
            v = statistics.median(r.get(k, 0) for r in timed)
            med[k] = round(v, 6) if k.endswith("_s") else (int(v) if float(v).is_integer() else v)
        return {"ds_counts": med, "ds_counts_steps": [{k: (round(v, 6) if k.endswith("_s") else v)
                                                       for k, v in sorted(r.items())} for r in self.rows],
                "ds_counts_wrapped": len(self.wrapped), "ds_counts_missing": self.missing}
