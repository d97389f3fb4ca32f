"""CPU speed against LibTorch CPU over the 73 problems of this run: LibTorch CPU's total-time
median / the backend's, geometric mean, and on how many problems the backend is faster.
Run from the repository root: python3 results/h200/20261125_conv_preset_fp32/derived/cpu_geomeans.py"""
import json, math, collections
d = json.load(open("results/h200/20261125_conv_preset_fp32/results.json"))
t = collections.defaultdict(dict)
for r in d["results"]: t[r["problem"]][r["backend"]] = r["total_time_ms"]["median"]
for b in ("onednn_cpu", "halide_cpu"):
    l = [math.log(v["libtorch_cpu"] / v[b]) for v in t.values()]
    print(b, round(math.exp(sum(l) / len(l)), 2), sum(x > 0 for x in l), "of", len(l))
