# The table in table.txt: python3 table.py . (cuBLASLt's GPU median / ours per problem and variant)
import json, sys, os, collections
out = sys.argv[1]
t = collections.defaultdict(dict)
for f in sorted(os.listdir(out)):
    if f.startswith("gemm_v") and f.endswith(".json"):
        v = f[6:-5]
        for r in json.load(open(os.path.join(out, f)))["results"]:
            key = r["problem"]
            name = "cublaslt" if r["backend"] == "cublaslt" else "v" + v
            t[key][name] = (r["gpu_time_ms"]["median"] if r["status"] == "passed" else None, r["status"])
cols = ["v3", "v4", "v5", "v6", "v7", "v8", "v9"]
print("problem".ljust(42), "cublaslt_ms", " ".join(c.rjust(6) for c in cols), " (speed vs cuBLASLt)")
for k in t:
    c = t[k].get("cublaslt", (None,))[0]
    cells = []
    for col in cols:
        x = t[k].get(col)
        cells.append(("%.3f" % (c / x[0])) if x and x[0] and c else (x[1][:6] if x else "-"))
    print(k[:42].ljust(42), ("%.4f" % c if c else "-").rjust(11), " ".join(s.rjust(6) for s in cells))
