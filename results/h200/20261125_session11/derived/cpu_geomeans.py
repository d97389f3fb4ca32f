"""CPU geomeans of session 11 README: LibTorch CPU total-time median / the backend's over the 73 problems.
Run from the repository root: python3 results/h200/20261125_session11/derived/cpu_geomeans.py"""
import json, math, collections
d = json.load(open("results/h200/20261125_session11/preset_fp32/results.json"))
t = collections.defaultdict(dict)
for r in d["results"]: t[r["problem"]][r["backend"]] = r["total_time_ms"]["median"]
for b in ("onednn_cpu", "halide_cpu"):
    l = [math.log(v["libtorch_cpu"] / v[b]) for v in t.values()]
    print(b, round(math.exp(sum(l) / len(l)), 2), sum(x > 0 for x in l), "of", len(l))
