# table.py DIR: the table of gemm_fp32_v*.json (one process per variant: own_cuda, cuBLASLt) as
# cuBLASLt's median in the same process over ours.
import json, sys, os, collections
# gemm_fp32_v*.json: each process's own_cuda (one variant), cublaslt and libtorch_cuda
out = sys.argv[1]
t = collections.defaultdict(dict)
vs = []
for f in sorted(os.listdir(out)):
    if f.startswith("gemm_fp32_v") and f.endswith(".json") and f[11:-5].isdigit():
        v = f[len("gemm_fp32_v"):-5]; vs.append("v" + v)
        for r in json.load(open(os.path.join(out, f)))["results"]:
            ms = r["gpu_time_ms"]["median"] if r["status"] == "passed" else None
            b = r["backend"]
            name = "v" + v if b == "own_cuda" else b + "@v" + v
            t[r["problem"]][name] = (ms, r["status"])
vs.sort(key=lambda s: int(s[1:]))
print("problem".ljust(36), "cublaslt_ms torch_ms", " ".join(c.rjust(7) for c in vs), " (cuBLASLt's median in the same process / ours)")
for k in t:
    cb = [x[0] for n, x in t[k].items() if n.startswith("cublaslt@") and x[0]]
    tb = [x[0] for n, x in t[k].items() if n.startswith("libtorch_cuda@") and x[0]]
    cells = []
    for v in vs:
        x = t[k].get(v); c = t[k].get("cublaslt@" + v, (None,))[0]
        cells.append(("%.3f" % (c / x[0])) if x and x[0] and c else (x[1][:7] if x else "-"))
    print(k[:36].ljust(36), ("%.3f" % min(cb) if cb else "-").rjust(11), ("%.3f" % min(tb) if tb else "-").rjust(8), " ".join(s.rjust(7) for s in cells))
