#!/usr/bin/env python3
"""adam-pools.py DB [CONFIG...] - `zbench run --gpus 2` runs (issue 14): the CPU Adam rate of
both ranks' pools together (Gparam/s: each running Adam task counted at its own mean rate)
while both pools run, split by how many ranks' GPU compute (g), H2D (h) and D2H (d) streams
were busy over most of each interval, steps >= 2; only classes covering more than 2 ms a step
are printed (ms a step in parentheses). Read-only; open a copy of the database. Used for
BENCHMARKS.md (issue 14, branch mgpu4)."""
import collections, sqlite3, sys


def union(iv):
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def overlap(u, s, e):
    return sum(max(0, min(b, e) - max(a, s)) for a, b in u)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: adam-pools.py DB [CONFIG...]")
    db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
    cfgs = [int(a) for a in sys.argv[2:]] or [r[0] for r in db.execute("select distinct config_id from ranks")]
    for cfg in cfgs:
        off = dict(db.execute("select rank,t0_offset_ns from ranks where config_id=?", (cfg,)))
        ev = [(rk, s + off[rk], e + off[rk], res, kind, step, p) for rk, s, e, res, kind, step, p in db.execute(
            "select e.rank,e.start_ns,e.end_ns,t.resource,t.kind,t.step,t.params from rank_events e "
            "join tasks t using(config_id,task_id) where e.config_id=?", (cfg,))]
        steps = len(set(x[5] for x in ev if x[5] >= 2)) or 1
        ad = [x for x in ev if x[4] == "cpu_adam" and x[5] >= 2]
        if not ad:
            print("config %d: no CPU Adam" % cfg)
            continue
        busy = {(rk, r): union([(x[1], x[2]) for x in ev if x[0] == rk and x[3] == r])
                for rk in off for r in ("gpu", "pcie_h2d", "pcie_d2h")}
        cuts = set(x[1] for x in ad) | set(x[2] for x in ad)
        for u in busy.values():
            for a, b in u:
                cuts.update((a, b))
        lo, hi = min(x[1] for x in ad), max(x[2] for x in ad)
        acc = collections.defaultdict(lambda: [0.0, 0.0])
        for a, b in zip(sorted(cuts), sorted(cuts)[1:]):
            if a < lo or b > hi or b <= a:
                continue
            act = [x for x in ad if x[1] <= (a + b) / 2 < x[2]]
            if len(set(x[0] for x in act)) < 2:
                continue
            key = tuple(sum(1 for rk in off if overlap(busy[(rk, r)], a, b) > 0.5 * (b - a))
                        for r in ("gpu", "pcie_h2d", "pcie_d2h"))
            acc[key][0] += sum(x[6] / (x[2] - x[1]) for x in act) * (b - a)
            acc[key][1] += b - a
        print("config %d: %s" % (cfg, " ".join("g%d h%d d%d %.2f (%.0f)" % (k + (v[0] / v[1], v[1] / 1e6 / steps))
                                                for k, v in sorted(acc.items()) if v[1] > 2e6 * steps)))


main()
