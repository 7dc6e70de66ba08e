"""ds_step.py --step-split: where the host time of a ZeRO step goes, method by method.

DeepSpeed 0.19's stage_1_and_2.py step() with offload_optimizer does, in order:
_wait_for_offload_copies (the last gradient copies down), scaled_global_norm (for CPU
offload: one .item() per parameter tensor of the norms the backward hooks computed),
unscale_and_clip_grads (multiplies the host fp32 gradient partition by 1/scale in place,
even without clipping at loss scale 1: 8 B/param, measured 63-73 ns per parameter), _optimizer_step
(DeepSpeedCPUAdam over the whole fp32 partition), then inline the fp32 -> bf16 copy_ into
the pinned buffer and the non-blocking copy up, reset_cpu_buffers and, per group,
_update_model_bit16_weights (per tensor Python). The backward's hooks flush the gradient
bucket with reduce_ipg_grads, which calls copy_grads_in_partition per tensor (norm, overflow
check that synchronizes, fp32 cast, copy down).

Split wraps those methods on the optimizer instance (an attribute on the instance wins
over the class's method, and step() calls them through self) and sums their host wall time
per step (with ipg_wait_gpu: see sync_flush below); "step_other" is the rest of engine.step() (the inline cast, the copy's launch,
the engine's own Python). Nested calls are counted in both (reduce_ipg_grads contains
copy_grads_in_partition; reset_cpu_buffers contains a _wait_for_offload_copies).
cast_probe times the inline cast alone afterwards on the same tensors (the host's
fp32 -> bf16 rate at this size)."""
import json
import statistics
import sys
import time

STEP_METHODS = ("_wait_for_offload_copies", "scaled_global_norm", "unscale_and_clip_grads", "_optimizer_step",
                "_update_model_bit16_weights", "reset_cpu_buffers",
                # ZeRO-3 (stage3.py step(): per sub-group _prepare_sub_group, unscale_and_clip_grads,
                # _optimizer_step, _reassign_or_swap_out_partitioned_parameters (the fp32 -> 16-bit
                # copy_: into the GPU partition through a pageable temporary, or with offload_param
                # into the pinned host partition), _release_sub_group; around them the norms, the
                # parameter release and _post_step); a name the optimizer lacks is not wrapped
                "_partition_all_parameters", "_overflow_check_and_loss_scale_update", "_get_norm_groups",
                "_prepare_sub_group", "_reassign_or_swap_out_partitioned_parameters", "_release_sub_group",
                "_post_step")
METHODS = STEP_METHODS + ("reduce_ipg_grads", "copy_grads_in_partition")


class Split:
    def __init__(self, optimizer, torch):
        self.ms, self.calls, self.steps = {}, {}, []
        self.wrapped, self.depth, self.top_ms = [], 0, 0.0
        self.tensor_calls, self.last_tensor_calls = [], []
        self.torch = torch
        # without overlap_comm the first per-tensor overflow check of a flush waits for the
        # backward kernels queued before it: synchronizing at the flush's start (timed as
        # ipg_wait_gpu) waits for the same work, so the per-tensor times below are the flush's own
        self.sync_flush = not getattr(optimizer, "overlap_comm", False)
        for name in METHODS:
            f = getattr(optimizer, name, None)
            if callable(f):
                setattr(optimizer, name, self._wrap(name, f))
                self.wrapped.append(name)
        self.optimizer = optimizer

    def _wrap(self, name, f):
        def timed(*args, **kwargs):
            if name == "reduce_ipg_grads" and self.sync_flush:
                t0 = time.perf_counter()
                self.torch.cuda.synchronize()
                self.ms["ipg_wait_gpu"] = self.ms.get("ipg_wait_gpu", 0.0) + (time.perf_counter() - t0) * 1e3
            t0 = time.perf_counter()
            self.depth += 1
            try:
                return f(*args, **kwargs)
            finally:
                self.depth -= 1
                ms = (time.perf_counter() - t0) * 1e3
                self.ms[name] = self.ms.get(name, 0.0) + ms
                self.calls[name] = self.calls.get(name, 0) + 1
                if self.depth == 0 and name in STEP_METHODS:
                    self.top_ms += ms  # outermost calls only: nested time counted once
                if name == "copy_grads_in_partition" and args:
                    self.tensor_calls.append((args[0].numel(), round(ms, 4)))
        return timed

    def end_step(self, step_phase_ms):
        """Close one step: its sums, and the part of engine.step() outside the wrapped methods."""
        row = dict(self.ms)
        row["step_other"] = step_phase_ms - self.top_ms
        self.steps.append((row, dict(self.calls)))
        # each step in the log as it ends: a run cut short by its timeout still tells
        print(f"ds_split: step {len(self.steps) - 1} " + json.dumps({k: round(v, 3) for k, v in row.items()}),
              file=sys.stderr, flush=True)
        self.ms, self.calls, self.top_ms = {}, {}, 0.0
        self.last_tensor_calls, self.tensor_calls = self.tensor_calls, []

    def cast_probe(self, torch, repeats=3):
        """Median ms of the stage-2 offload cast (fp32 partition -> pinned bf16 buffer), or None."""
        o = self.optimizer
        bufs = getattr(o, "param_buffer_of_bit16_for_cpu_offload_groups", None)
        fp32 = getattr(o, "single_partition_of_fp32_groups", None)
        if not bufs or not fp32 or bufs[0].device.type != "cpu":
            return None
        times = []
        with torch.no_grad():
            for _ in range(repeats):
                t0 = time.perf_counter()
                for b, f in zip(bufs, fp32):
                    b.data.copy_(f.data)  # the same values step() wrote: harmless
                times.append((time.perf_counter() - t0) * 1e3)
        return {"ms": statistics.median(times), "elements": sum(f.numel() for f in fp32),
                "threads": torch.get_num_threads()}

    def result(self, warmup):
        torch = self.torch
        timed = self.steps[warmup:]
        names = sorted({k for row, _ in timed for k in row})
        out = {"split_ms": {k: round(statistics.median(row.get(k, 0.0) for row, _ in timed), 3) for k in names},
               "split_calls": timed[-1][1] if timed else {}, "split_methods": self.wrapped,
               "split_flush_synced": self.sync_flush,
               # the last step's copy_grads_in_partition calls in order: [tensor elements, ms]
               "split_tensor_calls": self.last_tensor_calls}
        probe = self.cast_probe(torch)
        if probe:
            out["cast_probe"] = probe
        return out
