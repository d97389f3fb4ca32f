#!/usr/bin/env python3
"""ratio.py RESULTS.json [BASE_BACKEND]: per problem/dtype/layout, each backend's GPU median (us)
and BASE's median / its median (BASE default cudnn, or cublaslt for ops), geomean per backend."""
import json, math, sys, collections
d = json.load(open(sys.argv[1]))
rs = d["results"]
base = sys.argv[2] if len(sys.argv) > 2 else ("cudnn" if any(r["backend"] == "cudnn" for r in rs) else "cublaslt")
def key(r):
    p = r.get("problem"); p = p if isinstance(p, str) else json.dumps(p, sort_keys=True)
    return (p, r.get("dtype", ""), r.get("layout", ""))
t = collections.OrderedDict()
for r in rs:
    ms = (r.get("gpu_time_ms") or {}).get("median") if r["status"] == "passed" else None
    t.setdefault(key(r), {})[r["backend"] + (":" + str(r.get("variant")) if r.get("variant") not in (None, "", "auto") else "")] = (ms, r["status"], r.get("algorithm", "")[:60])
backs = list(dict.fromkeys(b for v in t.values() for b in v))
g = collections.defaultdict(list)
print(f"{'problem':48} {'dt':5} {'lay':5} " + " ".join(f"{b[:18]:>18}" for b in backs) + f"   (us; x = {base}/ours)")
for k, v in t.items():
    bm = v.get(base, (None,))[0]
    cells = []
    for b in backs:
        ms, st, _ = v.get(b, (None, "-", ""))
        if ms is None: cells.append(f"{st[:18]:>18}"); continue
        x = bm / ms if bm else None
        if x: g[b].append(x)
        cells.append(f"{ms*1e3:9.1f} {('x%.3f' % x) if x else '':>8}")
    print(f"{k[0][:48]:48} {k[1]:5} {k[2]:5} " + " ".join(cells))
print("geomean: " + ", ".join(f"{b} {math.exp(sum(map(math.log, xs))/len(xs)):.3f} (min {min(xs):.3f}, n {len(xs)})" for b, xs in g.items()))
for k, v in t.items():
    for b, (ms, st, alg) in v.items():
        if b != base: print("  ", k[0][:40], k[1], k[2], b, st, alg)
