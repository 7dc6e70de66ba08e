#!/usr/bin/env python3
"""Measured against predicted for the runs of a measurement plan: each result line of
ds-results.jsonl (scripts/ds-plan.sh; matched to its plan run by the line's "tag")
next to `zbench predict` of the same model, DeepSpeed config, batch, precision and
checkpointing, with the step-time MAPE and worst error of each set (fit, held-out, ...) and
the GPU peak and host memory errors.

    python3 scripts/hf-plan-compare.py RESULTS.jsonl [RESULTS2.jsonl ...] [--plan PLAN]
        [--zbench build/zbench] [--hw hw/h200-machine-deepspeed.json] [--json]

A run zbench cannot predict (a family its --hf-config reader lacks, a config it refuses) is
listed with zbench's one-line reason and left out of the averages: not predicted, not guessed."""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def predict(zbench, hw, run):
    cmd = [zbench, "predict", "--no-db", "--json", "--hw", hw, "--hf-config", run["model"], "--ds-config",
           f"peers/configs/{run['config']}.json", "--seq", str(run["seq"]), "--micro-batch",
           str(run["micro_batch"]), "--gas", str(run["gas"]), f"--{run['dtype']}"]
    if run["grad_ckpt"] != "none":
        cmd += ["--ckpt", run["grad_ckpt"]]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["zbench failed"])[-1]
    r = json.loads(p.stdout)
    mem = r.get("memory", {})
    return {"step_ms": 1e3 * r["step_time_s"], "gpu_gib": mem.get("gpu_bytes", float("nan")) / 2**30,
            "host_gib": mem.get("host_bytes", float("nan")) / 2**30}, None


def mape(rows, pred, meas):
    """Mean relative error over the rows with a positive measurement, NaN when none has one."""
    e = [abs(r[pred] - r[meas]) / r[meas] for r in rows if r[meas] > 0]
    return statistics.mean(e) if e else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--plan", default=os.path.join(ROOT, "peers", "plans", "hf-deepspeed.jsonl"))
    ap.add_argument("--zbench", default=os.path.join(ROOT, "build", "zbench"))
    ap.add_argument("--hw", default="hw/h200-machine-deepspeed.json")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    plan = {r["name"]: r for r in (json.loads(l) for l in open(a.plan) if l.strip())}
    lines = {}
    for path in a.results:
        for l in open(path):
            if l.startswith('{"harness"'):
                r = json.loads(l)
                if r.get("tag") in plan:
                    lines[r["tag"]] = r  # a later line of the same run wins
    rows = []
    for name, run in plan.items():
        m = lines.get(name)
        if not m:
            continue
        pred, why = predict(a.zbench, a.hw, run)
        row = {"name": name, "set": run["set"], "family": run["family"], "config": run["config"],
               "measured_ms": m["step_ms"], "gpu_meas": m["gpu_peak_GiB"], "host_meas": m["host_rss_GiB"],
               "skipped_steps": m.get("skipped_steps")}
        if pred:
            row.update(predicted_ms=pred["step_ms"], error=(pred["step_ms"] - m["step_ms"]) / m["step_ms"],
                       gpu_pred=pred["gpu_gib"], host_pred=pred["host_gib"])
        else:
            row["not_predicted"] = why
        rows.append(row)
    sets = {}
    for r in rows:
        if "error" in r:
            sets.setdefault(r["set"], []).append(r)
    summary = {s: {"n": len(v), "step_mape": statistics.mean(abs(r["error"]) for r in v),
                   "step_worst": max(abs(r["error"]) for r in v),
                   "gpu_mape": mape(v, "gpu_pred", "gpu_meas"), "host_mape": mape(v, "host_pred", "host_meas")}
               for s, v in sets.items()}
    if a.json:
        json.dump({"runs": rows, "summary": summary}, sys.stdout, indent=1)
        print()
        return
    print(f"{'run':5} {'set':9} {'family':9} {'config':30} {'meas ms':>9} {'pred ms':>9} {'err %':>7} "
          f"{'GPU m/p GiB':>13} {'host m/p GiB':>13}")
    for r in rows:
        if "error" in r:
            print(f"{r['name']:5} {r['set']:9} {r['family']:9} {r['config']:30} {r['measured_ms']:9.1f} "
                  f"{r['predicted_ms']:9.1f} {100 * r['error']:+7.1f} {r['gpu_meas']:6.1f}/{r['gpu_pred']:<6.1f} "
                  f"{r['host_meas']:6.1f}/{r['host_pred']:<6.1f}")
        else:
            print(f"{r['name']:5} {r['set']:9} {r['family']:9} {r['config']:30} {r['measured_ms']:9.1f} "
                  f"not predicted: {r['not_predicted'][:90]}")
    for s, v in sorted(summary.items()):
        print(f"{s}: {v['n']} runs, step MAPE {100 * v['step_mape']:.1f} % (worst {100 * v['step_worst']:.1f} %), "
              f"GPU peak MAPE {100 * v['gpu_mape']:.1f} %, host MAPE {100 * v['host_mape']:.1f} %")
    missing = [n for n in plan if n not in lines]
    if missing:
        print(f"not measured: {' '.join(missing)}")


if __name__ == "__main__":
    main()
