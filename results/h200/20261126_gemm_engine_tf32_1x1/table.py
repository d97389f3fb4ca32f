#!/usr/bin/env python3
"""table.txt of this folder: (1) myops matmul variant 4 (the GEMM engine's automatic plan) beside
cuBLASLt in one process, cuBLASLt's GPU median / ours; (2) myconv's 1x1 layers with --variant
auto (variant 11 where it ran) beside cuDNN, cuDNN's GPU median / ours, with the ratio of the
earlier auto rule's run (../20261125_conv_variant_auto_1x1/) beside it.
Run: python3 table.py DIR."""
import json, math, os, sys

d = sys.argv[1] if len(sys.argv) > 1 else "."
med = lambda r: (r.get("gpu_time_ms") or {}).get("median")
out = ["(1) matmul, variant 4 against cuBLASLt (same process)",
       f"{'problem':34s} {'cuBLASLt ms':>11s} {'ours ms':>9s} {'ratio':>6s}"]
g = {}
for r in json.load(open(os.path.join(d, "gemm_v4.json")))["results"]:
    g.setdefault(r["problem"], {})[r["backend"]] = r
for p, b in g.items():
    o, c = med(b["own_cuda"]), med(b["cublaslt"])
    out.append(f"{p:34s} {c:11.4f} {o:9.4f} {c / o:6.3f}  {b['own_cuda']['status']}")


def conv(path):
    t = {}
    for r in json.load(open(path))["results"]:
        k = (r["problem"].split("dt")[0].split('n"')[0], r["dtype"], r["params"]["layout"])
        t.setdefault(k, {})[r["backend"]] = r
    return t


new = conv(os.path.join(d, "conv_1x1_auto.json"))
old_path = os.path.join(d, "..", "20261125_conv_variant_auto_1x1", "results.json")
old = conv(old_path) if os.path.exists(old_path) else {}
out += ["", "(2) 1x1 layers, --variant auto against cuDNN (same process); 'before': the earlier rule's run",
        f"{'problem':24s} {'dtype':5s} {'layout':6s} {'ours':>5s} {'ratio':>6s} {'before':>6s}"]
rs = []
for k in sorted(new):
    o, c = new[k]["im2col_gemm_cuda"], new[k]["cudnn"]
    ratio = med(c) / med(o)
    rs.append(ratio)
    before = ""
    if k in old:
        before = f"{med(old[k]['cudnn']) / med(old[k]['im2col_gemm_cuda']):6.3f}"
    v = "v11" if "GEMM engine" in o["algorithm"] else "other"
    out.append(f"{k[0]:24s} {k[1]:5s} {k[2]:6s} {v:>5s} {ratio:6.3f} {before}")
out.append(f"geomean {math.exp(sum(map(math.log, rs)) / len(rs)):.3f} over {len(rs)} cases; "
           f">= 0.9: {sum(x >= 0.9 for x in rs)}")
print("\n".join(out))
