#!/usr/bin/env python3
"""Trim a PyTorch profiler (Kineto) Chrome trace to a small file that is still a valid
trace of the whole profiled span's device activity: every kernel, memcpy and memset,
every annotation (user_annotation, gpu_user_annotation, ProfilerStep#N), the metadata
and the profiler's window, plus the CPU operators and CUDA calls of the first
--cpu-ms milliseconds only (they are most of a trace's bytes). Flow events are left
out. Writes gzip when OUT ends in .gz. Prints the counts the tests check.

    scripts/kineto-trim.py FULL.json.gz tests/data/kineto-llama1b-z3-step.json.gz --cpu-ms 50
"""
import argparse
import gzip
import json
import sys

DEVICE = {"kernel", "gpu_memcpy", "gpu_memset", "user_annotation", "gpu_user_annotation", "Trace"}
CPU = {"cpu_op", "cuda_runtime", "cuda_driver", "python_function"}


def load(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        return json.load(f)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("full")
    p.add_argument("out")
    p.add_argument("--cpu-ms", type=float, default=50.0)
    a = p.parse_args()
    d = load(a.full)
    ev = d["traceEvents"]
    t0 = min(e["ts"] for e in ev if e.get("ph") == "X")

    def keep(e):
        cat = e.get("cat")
        if e.get("ph") in ("M", "i") or cat in DEVICE or str(e.get("name", "")).startswith("ProfilerStep#"):
            return True
        return cat in CPU and e.get("ph") == "X" and e["ts"] - t0 < a.cpu_ms * 1000

    d["traceEvents"] = [e for e in ev if keep(e)]
    text = json.dumps(d).encode()
    with (gzip.open(a.out, "wb", 9) if a.out.endswith(".gz") else open(a.out, "wb")) as f:
        f.write(text)
    kept = d["traceEvents"]
    count = lambda c: sum(1 for e in kept if e.get("ph") == "X" and e.get("cat") == c)
    copies = [e for e in kept if e.get("cat") == "gpu_memcpy"]
    print(json.dumps({
        "events": len(kept),
        "kernels": count("kernel"), "memcpys": count("gpu_memcpy"), "memsets": count("gpu_memset"),
        "apis": count("cuda_runtime") + count("cuda_driver"), "cpu_ops": count("cpu_op"),
        "annotations": count("user_annotation"), "gpu_annotations": count("gpu_user_annotation"),
        "h2d_bytes": sum(e["args"]["bytes"] for e in copies if "HtoD" in e["name"]),
        "d2h_bytes": sum(e["args"]["bytes"] for e in copies if "DtoH" in e["name"]),
        "gpu_span_ms": (max(e["ts"] + e["dur"] for e in kept if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
                        - min(e["ts"] for e in kept if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))) / 1e3,
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
