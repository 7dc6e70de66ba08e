#!/usr/bin/env python3
"""overhead.py DIR - what tracing costs a step: the step logs DIR/<name>-untraced[-N].log and
DIR/<name>-traced[-N].log of a suite (scripts/gpu-suite.sh), each run's step time (peers/ds_step.py's
result line: step_ms, the median after its warm-up; scripts/suites/trace-torch-step.py's ZBSUMMARY
line: median_step_ms), and per name the median of each side and the overhead in percent. Runs that
printed no step time are listed as such."""
import collections, glob, json, os, re, statistics, sys


def step_ms(path):
    for line in reversed(open(path, errors="replace").read().splitlines()):
        try:
            if line.startswith('{"harness": "ds_step"'):
                return float(json.loads(line)["step_ms"])
            if line.startswith("ZBSUMMARY "):
                return float(json.loads(line[len("ZBSUMMARY "):])["median_step_ms"])
        except (ValueError, KeyError):
            return None
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: overhead.py DIR")
    runs = collections.defaultdict(lambda: {"untraced": [], "traced": []})
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.log"))):
        m = re.fullmatch(r"(.+)-(untraced|traced)(-\d+)?\.log", os.path.basename(path))
        if not m:
            continue
        ms = step_ms(path)
        print("%-28s %s" % (os.path.basename(path), "%.2f ms" % ms if ms is not None else "no step time"))
        if ms is not None:
            runs[m.group(1)][m.group(2)].append(ms)
    if not runs:
        sys.exit("overhead.py: no <name>-untraced / <name>-traced logs in " + sys.argv[1])
    for name, r in sorted(runs.items()):
        if not r["untraced"] or not r["traced"]:
            print("%s: not measured (untraced %d runs, traced %d)" % (name, len(r["untraced"]), len(r["traced"])))
            continue
        u, t = statistics.median(r["untraced"]), statistics.median(r["traced"])
        print("%s: untraced %.2f ms (%d runs), traced %.2f ms (%d), overhead %+.2f %%"
              % (name, u, len(r["untraced"]), t, len(r["traced"]), 100 * (t - u) / u))


main()
