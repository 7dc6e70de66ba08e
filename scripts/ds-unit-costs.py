#!/usr/bin/env python3
"""DeepSpeed's host unit costs read off the ds_counts of the fitting set's runs: each cost is
the host seconds of one named path (peers/ds_counts.py's wrapped methods, nested paths taken
out) over the count of calls, parameters or bytes it handles, pooled over the steady steps
(ds_counts_steps after warm-up) of the runs that exercise the path:

    python3 scripts/ds-unit-costs.py RESULTS.jsonl [--plan PLAN] [--set fit] > FILE.tsv

Only runs whose plan set is --set (default "fit", and "tune": the tuned configuration of a
fitting run, the same model) are read; the held-out runs never are. Each row: the profile
key (core/dsprofile.h), the pooled value, its unit, the arithmetic, the runs and each run's own
value. Rows marked "check" are costs the profile holds from other measurements (the split of
step()), printed beside what these counters say; they are not set from here."""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOOKS = ("hook_pre_fwd", "hook_post_fwd", "hook_pre_bwd", "hook_post_bwd")


def steady(run):
    """The steps after warm-up: their counts and times, one dict a step."""
    rows = run.get("ds_counts_steps") or []
    return rows[run.get("warmup_steps", 0):]


def total(rows, key):
    return sum(r.get(key, 0) for r in rows)


def flushes_in_hooks(rows, hook, flush, epilogue):
    """The gradient hook's seconds outside the bucket reductions it triggers: every flush but
    the epilogue's (one a backward) runs inside a hook. The epilogue's flush is taken at the
    flushes' mean time, or at the whole epilogue's time when that is less (a few large
    buckets: the epilogue's last one is the small rest)."""
    n, ep = total(rows, flush + "_calls"), total(rows, epilogue + "_calls")
    if not n:
        return total(rows, hook + "_s")
    outside = min(total(rows, flush + "_s") * ep / n, total(rows, epilogue + "_s"))
    return total(rows, hook + "_s") - (total(rows, flush + "_s") - outside)


# (key, unit, arithmetic, stage the path belongs to, seconds(rows), count(rows), scale)
# value = scale * seconds / count (scale 2: a pre and a post hook per module and pass).
COSTS = [
    ("hook_s", "s", "2 x (hook_{pre,post}_{fwd,bwd}_s - gather_s - handle_wait_s - release_param_s) / hook calls",
     3, lambda r: sum(total(r, h + "_s") for h in HOOKS) - total(r, "gather_s") - total(r, "handle_wait_s")
     - total(r, "release_param_s"), lambda r: sum(total(r, h + "_calls") for h in HOOKS), 2),
    ("fetch_s", "s", "gather_s / gather_params", 3, lambda r: total(r, "gather_s"),
     lambda r: total(r, "gather_params"), 1),
    ("release_s", "s", "release_param_s / release_params", 3, lambda r: total(r, "release_param_s"),
     lambda r: total(r, "release_params"), 1),
    ("z3_grad_s", "s", "(grad_hook_s - its grad_bucket_flush_s) / grad_hook_calls", 3,
     lambda r: flushes_in_hooks(r, "grad_hook", "grad_bucket_flush", "grad_epilogue"),
     lambda r: total(r, "grad_hook_calls"), 1),
    ("z3_part_s", "s", "(grad_partition_s - grad_offload_s) / grad_partition_params", 3,
     lambda r: total(r, "grad_partition_s") - total(r, "grad_offload_s"),
     lambda r: total(r, "grad_partition_params"), 1),
    ("z3_offload_s", "s", "grad_offload_s / grad_offload_calls", 3, lambda r: total(r, "grad_offload_s"),
     lambda r: total(r, "grad_offload_calls"), 1),
    ("flush_s", "s", "(grad_bucket_flush_s - grad_partition_s) / grad_bucket_flush_calls", 3,
     lambda r: total(r, "grad_bucket_flush_s") - total(r, "grad_partition_s"),
     lambda r: total(r, "grad_bucket_flush_calls"), 1),
    ("z2_hook_s", "s", "(grad_hook_s - its grad_bucket_flush_s) / grad_hook_calls", 2,
     lambda r: flushes_in_hooks(r, "grad_hook", "grad_bucket_flush", "grad_epilogue"),
     lambda r: total(r, "grad_hook_calls"), 1),
    ("z2_flush_s", "s", "(grad_bucket_flush_s - grad_copy_s) / grad_bucket_flush_calls", 2,
     lambda r: total(r, "grad_bucket_flush_s") - total(r, "grad_copy_s"),
     lambda r: total(r, "grad_bucket_flush_calls"), 1),
]


def accumulate(runs):
    """ZeRO-3's partition_grads per parameter at a micro-step after the first (the gradient
    partition brought up from the pinned host buffer, added, sent down: the three copies that
    ZeRO-1/2's async_accumulate_grad_in_cpu_via_gpu issues per tensor): a gas > 1 run's
    partition seconds less its first micro-step's parameters at a gas-1 run's per-parameter
    time, over the rest. Returns (value, per-run text) or None."""
    one = [r for r in runs if r["gas"] == 1 and r["stage"] == 3 and r["oparam"]]
    many = [r for r in runs if r["gas"] > 1 and r["stage"] == 3 and r["oparam"]]
    if not one or not many:
        return None
    rows1 = [x for r in one for x in r["rows"]]
    first = (total(rows1, "grad_partition_s") - total(rows1, "grad_offload_s")) / total(rows1, "grad_partition_params")
    sec = cnt = 0
    for r in many:
        rw = r["rows"]
        per_micro = total(rw, "grad_partition_params") / len(rw) / r["gas"]
        sec += total(rw, "grad_partition_s") - total(rw, "grad_offload_s") - first * per_micro * len(rw)
        cnt += per_micro * (r["gas"] - 1) * len(rw)
    names = "+".join(r["name"] for r in many) + " less " + "+".join(r["name"] for r in one)
    return sec / cnt, names, f"first micro-step {1e6 * first:.1f} us a parameter"


def per_step(rows, key):
    return total(rows, key) / len(rows)


def median_of(run, key):
    """The run's median over its steady steps (ds_counts), beside its median phase times."""
    return run["median"].get(key, 0)


def module_calls(runs, model):
    """Module calls per micro-step of a model, forward and backward, as ZeRO-3's pre-hooks
    count them on a run of the same model (every module's forward and backward runs whether
    or not DeepSpeed hooks it)."""
    for r in runs:
        if r["model"] == model and total(r["rows"], "hook_pre_fwd_calls"):
            g = r["gas"]
            return per_step(r["rows"], "hook_pre_fwd_calls") / g, per_step(r["rows"], "hook_pre_bwd_calls") / g
    return None


def residuals(runs):
    """What the counters do not hold, per module call, read off the phase times (fwd_ms,
    bwd_ms: host wall time of engine() and engine.backward(), medians over the steady steps)
    less every counted path in them (ds_counts: medians of the same steps): ZeRO-1/2 runs (no DeepSpeed path in the forward): eager PyTorch's module Python
    forward and backward; ZeRO-3 runs: the same plus what the coordinator's hooks cost
    outside the counted functions (wrap_s), with the ZeRO-1/2 values taken out."""
    out = []
    z2 = [r for r in runs if r["stage"] < 3 and module_calls(runs, r["model"])]
    if not z2:
        return out
    f_s = f_n = b_s = b_n = 0
    each_f, each_b = [], []
    for r in z2:
        mf, mb = module_calls(runs, r["model"])
        counted = median_of(r, "grad_hook_s") + median_of(r, "grad_epilogue_s")
        f_s += r["fwd_ms"] / 1e3
        b_s += r["bwd_ms"] / 1e3 - counted
        f_n += mf * r["gas"]
        b_n += mb * r["gas"]
        each_f.append(f"{r['name']} {1e3 * r['fwd_ms'] / (mf * r['gas']):.1f} us")
        each_b.append(f"{r['name']} {1e6 * (r['bwd_ms'] / 1e3 - counted) / (mb * r['gas']):.1f} us")
    py_f, py_b = f_s / f_n, b_s / b_n
    names = "+".join(r["name"] for r in z2)
    out.append(("py_fwd_s", py_f, "s", "fwd_ms / forward module calls (of ZeRO-3's count on the same model)",
                names, ", ".join(each_f)))
    out.append(("py_bwd_s", py_b, "s", "(bwd_ms - grad_hook_s - grad_epilogue_s) / backward module calls",
                names, ", ".join(each_b)))
    z3 = [r for r in runs if r["stage"] == 3 and r["oparam"]]
    if not z3:
        return out
    w_s = w_n = 0
    each = []
    for r in z3:
        fwd_counted = median_of(r, "hook_pre_fwd_s") + median_of(r, "hook_post_fwd_s")
        bwd_counted = sum(median_of(r, k) for k in ("hook_pre_bwd_s", "hook_post_bwd_s", "grad_hook_s",
                                                     "grad_epilogue_s"))
        mf, mb = median_of(r, "hook_pre_fwd_calls"), median_of(r, "hook_pre_bwd_calls")
        rest = (r["fwd_ms"] / 1e3 - fwd_counted - py_f * mf) + (r["bwd_ms"] / 1e3 - bwd_counted - py_b * mb)
        w_s += rest
        w_n += mf + mb
        each.append(f"{r['name']} {1e6 * rest / (mf + mb):.1f} us")
    out.append(("wrap_s", w_s / w_n, "s", "(fwd_ms + bwd_ms - their counted hook, gradient and epilogue paths "
                "- py_fwd_s, py_bwd_s x module calls) / module calls of both passes",
                "+".join(r["name"] for r in z3), ", ".join(each)))
    return out


def checks(runs):
    """Held costs beside the counters (not set from here)."""
    out = []
    for r in runs:
        rw, p = r["rows"], r["params"]
        n = len(rw)
        if total(rw, "unscale_clip_calls") and (r["stage"] == 3 or total(rw, "grad_offload_calls")):
            out.append(("check unscale_Bps", 8 * p * n / total(rw, "unscale_clip_s"), "B/s",
                        "8 B x params / unscale_clip_s", r["name"]))
        if r["stage"] == 3 and r["oparam"] and total(rw, "param_writeback_s"):
            out.append(("check cast_Bps", 6 * p * n / total(rw, "param_writeback_s"), "B/s",
                        "6 B x params / param_writeback_s (into the pinned host partition)", r["name"]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results")
    ap.add_argument("--plan", default=os.path.join(ROOT, "peers", "plans", "hf-deepspeed.jsonl"))
    ap.add_argument("--set", default="fit", help="the plan set whose runs are read (and its 'tune' runs)")
    a = ap.parse_args()
    plan = {r["name"]: r for r in (json.loads(l) for l in open(a.plan) if l.strip())}
    runs = []
    for l in open(a.results):
        if not l.startswith('{"harness"'):
            continue
        m = json.loads(l)
        p = plan.get(m.get("tag"))
        if not p or p["set"] not in (a.set, "tune") or not steady(m):
            continue
        oparam = m["ds_config_resolved"]["zero_optimization"].get("offload_param", {}).get("device", "none") != "none"
        runs.append({"name": p["name"], "set": p["set"], "gas": m["gas"], "stage": m["zero_stage"], "oparam": oparam,
                     "params": m["params"], "rows": steady(m), "model": p["model"], "fwd_ms": m["fwd_ms"],
                     "bwd_ms": m["bwd_ms"], "median": m.get("ds_counts", {})})
    if not runs:
        sys.exit(f"ds-unit-costs: no run of set '{a.set}' with ds_counts_steps in {a.results}")
    print(f"# ds-unit-costs.py {os.path.relpath(a.results, ROOT)} --set {a.set}: runs "
          + ", ".join(f"{r['name']} (ZeRO-{r['stage']}{', offload_param' if r['oparam'] else ''}, gas {r['gas']}, "
                      f"{len(r['rows'])} steady steps)" for r in runs))
    print("# command: python3 scripts/ds-unit-costs.py " + os.path.relpath(a.results, ROOT)
          + (f" --set {a.set}" if a.set != "fit" else "") + " > data/deepspeed-hf-unit-costs.tsv")
    print("key\tvalue\tunit\tarithmetic\truns\teach run")
    for key, unit, how, stage, sec, cnt, scale in COSTS:
        use = [r for r in runs if r["stage"] == stage and cnt(r["rows"]) > 0
               and (stage != 3 or r["oparam"] or key in ("z3_grad_s", "flush_s", "z3_part_s"))]
        if not use:
            continue
        s = sum(sec(r["rows"]) for r in use)
        c = sum(cnt(r["rows"]) for r in use)
        each = ", ".join(f"{r['name']} {1e6 * scale * sec(r['rows']) / cnt(r['rows']):.1f} us" for r in use)
        print(f"{key}\t{scale * s / c:.4g}\t{unit}\t{how}\t{'+'.join(r['name'] for r in use)}\t{each}")
    acc = accumulate(runs)
    if acc:
        print(f"acc_hook_s\t{acc[0]:.4g}\ts\tZeRO-3 partition_grads per parameter after the first micro-step"
              f"\t{acc[1]}\t{acc[2]}")
    over = [r for r in runs if total(r["rows"], "overflow_check_s") > 0.01]
    if over:
        b = sum(8 * r["params"] * total(r["rows"], "overflow_check_calls") for r in over)
        s = sum(total(r["rows"], "overflow_check_s") for r in over)
        each = ", ".join(f"{r['name']} {8 * r['params'] * total(r['rows'], 'overflow_check_calls') / total(r['rows'], 'overflow_check_s') / 1e9:.2f} GB/s"
                         for r in over)
        print(f"overflow_Bps\t{b / s:.4g}\tB/s\t8 B x params x overflow_check_calls / overflow_check_s"
              f"\t{'+'.join(r['name'] for r in over)}\t{each}")
    for key, v, unit, how, names, each in residuals(runs):
        print(f"{key}\t{v:.4g}\t{unit}\t{how}\t{names}\t{each}")
    for key, v, unit, how, name in checks(runs):
        print(f"{key}\t{v:.4g}\t{unit}\t{how}\t{name}\t")


if __name__ == "__main__":
    main()
