# The table in table.txt: python3 table.py . (cuDNN's GPU median / ours per layer and sub-variant)
import json, sys, os, collections
out = sys.argv[1]
t = collections.defaultdict(dict)
for f in sorted(os.listdir(out)):
    if f.startswith("dw_") and f.endswith(".json"):
        v = f[3:-5]
        for r in json.load(open(os.path.join(out, f)))["results"]:
            key = (r["params"]["layout"], r["dtype"], r["problem"])
            name = "cudnn" if r["backend"] == "cudnn" else v
            t[key][name] = r["gpu_time_ms"]["median"] if r["status"] == "passed" else r["status"][:5]
cols = ["auto", "8.1", "8.2", "8.3", "8.4", "8.5"]
print("layout dtype problem".ljust(52), "cudnn_us", " ".join(c.rjust(6) for c in cols), " (cudnn/ours)")
for k in sorted(t):
    c = t[k].get("cudnn")
    cells = []
    for col in cols:
        x = t[k].get(col)
        cells.append("%.3f" % (c / x) if isinstance(x, float) and isinstance(c, float) else (x or "-"))
    print(" ".join(k)[:52].ljust(52), ("%.1f" % (c * 1e3) if isinstance(c, float) else str(c)).rjust(8), " ".join(s.rjust(6) for s in cells))
