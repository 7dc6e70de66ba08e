#!/usr/bin/env python3
"""rank-waits.py DB [CONFIG...] - per rank of `zbench run --gpus N` runs (issue 14): the mean
wait of the GPU compute tasks that ran beside the rank's CPU Adam, i.e. the time from a task's
ready time (the end of the stream's previous task and of its dependencies, on the rank's own
timeline) to its end, less the median duration of the same task (op, pass, shape) in the
reference configuration (default 1: the run without CPU Adam), steps >= 2. Read-only; open a
copy of the database. Used for BENCHMARKS.md (issue 14, branch mgpu4)."""
import collections, sqlite3, statistics, sys


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
        sys.exit("usage: rank-waits.py DB [CONFIG...] (ZB_REF=<config id> of the reference run)")
    db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
    ref_id = int(__import__("os").environ.get("ZB_REF", "1"))
    ref = collections.defaultdict(list)
    for key in db.execute("select t.op,t.pass,t.m,t.n,t.k,e.end_ns-e.start_ns from tasks t join rank_events e "
                          "using(config_id,task_id) where t.config_id=? and t.resource='gpu' and t.step>=2", (ref_id,)):
        ref[key[:5]].append(key[5])
    ref = {k: statistics.median(v) for k, v in ref.items()}
    cfgs = [int(a) for a in sys.argv[2:]] or [r[0] for r in db.execute("select distinct config_id from ranks")]
    model = lambda c: db.execute("select model from configs where id=?", (c,)).fetchone()[0]
    for cfg in cfgs:
        if model(cfg) != model(ref_id):
            print("config %d: %s, not the reference's model: no reference durations" % (cfg, model(cfg)))
            continue
        rows = db.execute("select e.rank,e.task_id,e.start_ns,e.end_ns,t.resource,t.op,t.pass,t.m,t.n,t.k,t.step "
                          "from rank_events e join tasks t using(config_id,task_id) where e.config_id=?", (cfg,)).fetchall()
        deps = collections.defaultdict(list)
        for t, d in db.execute("select task_id,dep_id from task_deps where config_id=?", (cfg,)):
            deps[t].append(d)
        out = []
        for rk in sorted(set(r[0] for r in rows)):
            mine = [r for r in rows if r[0] == rk]
            end = {r[1]: r[3] for r in mine}
            cpu = union([(r[2], r[3]) for r in mine if r[4] == "cpu"])
            gpu = sorted([r for r in mine if r[4] == "gpu"], key=lambda r: r[2])
            tot, n, prev = 0.0, 0, None
            for r in gpu:
                ready, prev = (prev[3] if prev else None), r
                if ready is None or r[10] < 2:
                    continue
                ready = max([ready] + [end[d] for d in deps[r[1]] if d in end])
                if r[3] <= ready or overlap(cpu, ready, r[3]) < 0.5 * (r[3] - ready):
                    continue
                d0 = ref.get((r[5], r[6], r[7], r[8], r[9]))
                if d0 is not None:
                    tot += (r[3] - ready) - d0
                    n += 1
            out.append("rank %d %s" % (rk, "%.1f us over %d tasks" % (tot / n / 1e3, n) if n else "-"))
        print("config %d: %s" % (cfg, "; ".join(out)))


main()
