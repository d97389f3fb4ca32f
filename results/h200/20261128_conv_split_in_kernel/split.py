#!/usr/bin/env python3
"""Variant 11's split-K with its splits summed in the GEMM's kernel (by each tile's last unit)
against summed by the engine's second kernel, per layer: every stride-1 unpadded 1x1 layer of the
model grids (layers_1x1.txt), fp16, nhwc, pure timing, GPU medians in us, each plan forced by
MYCONV_GEMM_1X1_PLAN=128:S (MYCONV_GEMM_1X1_REDUCE=separate for the second kernel). Every ratio is
of files of one device call. cuDNN and auto from auto_cudnn.json (auto then summed in the kernel
where its rule split, Inception-v3's Mixed_7c layers).

    python3 split.py [FOLDER] > split.md

Sections: at 8b30f51 (*.json here: the sum's loads batched); the first design at f712bf4
(first_design/: one load at a time, the 256-wide tile too).
"""
import json
import math
import os
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def load(path):
    """{(layer name, dtype, backend): (gpu median us or None, algorithm)}."""
    out = {}
    for r in json.load(open(os.path.join(folder, path)))["results"]:
        g = (r.get("gpu_time_ms") or {}).get("median") if r.get("status") == "passed" else None
        out[(r.get("name"), r["dtype"], r["backend"])] = (g * 1e3 if g else None,
                                                          r.get("algorithm") or "")
    return out


def us(x):
    return f"{x:.1f}" if x else "-"


def geomean(v):
    v = [x for x in v if x]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else 0.0


def table(title, sub, splits):
    auto = load(os.path.join(sub, "auto_cudnn.json"))
    one = load(os.path.join(sub, "plan_128_1.json"))
    fused = {s: load(os.path.join(sub, f"plan_128_{s}.json")) for s in splits}
    separate = {s: load(os.path.join(sub, f"separate_128_{s}.json")) for s in splits}
    print(f"\n## {title}\n")
    cols = " | ".join(f"{s} in kernel | {s} second kernel" for s in splits)
    print(f"| layer | cuDNN | 128:1 | {cols} | best in kernel / best second kernel |")
    print("| --- | ---: | ---: | " + "---: | ---: | " * len(splits) + "---: |")
    ratios = []
    for key in sorted(one, key=lambda k: k[0]):
        name, dt, backend = key
        if backend != "im2col_gemm_cuda" or dt != "fp16":
            continue
        cudnn = auto.get((name, dt, "cudnn"), (None,))[0]
        f = {s: fused[s].get(key, (None,))[0] for s in splits}
        p = {s: separate[s].get(key, (None,))[0] for s in splits}
        bf, bp = min(x for x in f.values() if x), min(x for x in p.values() if x)
        ratios.append(bf / bp)
        print(f"| {name} | {us(cudnn)} | {us(one[key][0])} | " +
              " | ".join(f"{us(f[s])} | {us(p[s])}" for s in splits) + f" | {bf / bp:.2f} |")
    print(f"\nBest in kernel / best second kernel over {len(ratios)} layers: geomean "
          f"{geomean(ratios):.2f}, {min(ratios):.2f} to {max(ratios):.2f}; in kernel faster on "
          f"{sum(r < 1 for r in ratios)}.")


table("Summed in the kernel, loads batched (8b30f51), 128-wide tiles", ".", [2, 3, 4])
table("The first design (f712bf4): one load at a time", "first_design", [2, 4])
