#!/usr/bin/env python3
"""Programmatic dependent launch (PDL) on and off for our conv kernels, per dtype and layout:
the GPU median of --variant auto with MYCONV_PDL=0 over the same with PDL on (the default), pure
timing (a CUDA graph of back-to-back calls), each pair from one device call, on and off in two
processes. Above 1: PDL faster. Files: layers_on.json / layers_off.json (the 39 stride-1 unpadded
1x1 layers of the model grids, nhwc), ../20261128_conv_targets_pdl/{mobilenet_v2,inception_v3}.json
(on, beside cuDNN) / {mobilenet_v2,inception_v3}_off.json here.

    python3 pdl.py [FOLDER] > pdl.md
"""
import json
import math
import os
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
targets = os.path.join(folder, "..", "20261128_conv_targets_pdl")


def load(path):
    """{(problem, dtype, layout): gpu median (s) of our backend} for passed cases."""
    out = {}
    for r in json.load(open(path))["results"]:
        if r["backend"] != "im2col_gemm_cuda" or r.get("status") != "passed":
            continue
        g = (r.get("gpu_time_ms") or {}).get("median")
        if g:
            out[(r["problem"], r["dtype"], (r.get("params") or {}).get("layout"))] = g
    return out


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else 0.0


print("# Programmatic dependent launch on and off (H200, pure timing; off / on, above 1: on faster)")
print("\n`python3 pdl.py` in this folder. Variants 10, 11 and 13 take it; the others launch as before.")
for title, on, off in [
        ("The 39 1x1 layers, nhwc", os.path.join(folder, "layers_on.json"),
         os.path.join(folder, "layers_off.json")),
        ("MobileNet-v2", os.path.join(targets, "mobilenet_v2.json"),
         os.path.join(folder, "mobilenet_v2_off.json")),
        ("Inception-v3", os.path.join(targets, "inception_v3.json"),
         os.path.join(folder, "inception_v3_off.json"))]:
    a, b = load(on), load(off)
    groups = {}
    for k, t in a.items():
        if k in b:
            groups.setdefault((k[1], k[2]), []).append(b[k] / t)
    print(f"\n## {title}\n")
    print("| dtype | layout | problems | geomean off / on | lowest | highest |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for (dt, layout), r in sorted(groups.items()):
        print(f"| {dt} | {layout} | {len(r)} | {geomean(r):.3f} | {min(r):.3f} | {max(r):.3f} |")
