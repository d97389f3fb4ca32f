#!/usr/bin/env python3
"""Variant 13 (thin 1x1 GEMM) against the variants `--variant auto` ran on the same layers before
(6, 10, 11) and against cuDNN, per layer: every stride-1 unpadded 1x1 layer of the model grids
(layers_1x1.txt), nhwc, pure timing, GPU medians in us. Every ratio is of two files of one device
call. A case that did not pass shows "-" (unsupported: the variant does not take the layer).

    python3 thin.py [FOLDER] > thin.md

Sections: tf32/fp16/bf16 at 55d8790 (v13_cudnn, v6, v10, v11, auto_cudnn); tf32 again at
2fc29da (tf32/); one or two 16-row groups a warp at 7e3d976 (groups/); variant 11's plans at
9293d2b (v11_plans/); the first design at 12e3d82 (first_design/).
"""
import json
import math
import os
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def load(path):
    """{(layer name, dtype, layout, backend): (gpu median us or None, algorithm)}."""
    out = {}
    for r in json.load(open(os.path.join(folder, path)))["results"]:
        g = (r.get("gpu_time_ms") or {}).get("median") if r.get("status") == "passed" else None
        key = (r.get("name"), r["dtype"], (r.get("params") or {}).get("layout"), r["backend"])
        out[key] = (g * 1e3 if g else None, r.get("algorithm") or "")
    return out


def us(x):
    return f"{x:.1f}" if x else "-"


def ran(algorithm):
    """The variant an auto record ran: "v13" etc."""
    i = algorithm.find("): v")
    return algorithm[i + 3:].split()[0] if i >= 0 else "-"


def geomean(v):
    v = [x for x in v if x]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else 0.0


def versus(title, sub, others):
    v13 = load(os.path.join(sub, "v13_cudnn.json"))
    auto = load(os.path.join(sub, "auto_cudnn.json"))
    other = {v: load(os.path.join(sub, f"v{v}.json")) for v in others}
    print(f"\n## {title}\n")
    cols = " | ".join(f"v{v}" for v in others)
    print(f"| dtype | layer | cuDNN | v13 | {cols} | best other / v13 | auto ran | cuDNN / auto |")
    print("| --- | --- | ---: | ---: | " + "---: | " * len(others) + "---: | --- | ---: |")
    speeds = {}
    for key in sorted(v13, key=lambda k: (k[1], k[0])):
        if key[3] != "im2col_gemm_cuda":
            continue
        name, dt, layout, _ = key
        cudnn = v13.get((name, dt, layout, "cudnn"), (None,))[0]
        t13 = v13[key][0]
        t = {v: other[v].get(key, (None,))[0] for v in others}
        best = min([x for x in t.values() if x] or [0])
        a, ac = auto.get(key, (None, "")), auto.get((name, dt, layout, "cudnn"), (None,))[0]
        if not t13 and not any(t.values()):
            continue
        speed = ac / a[0] if a[0] and ac else None
        speeds.setdefault(dt, []).append(speed)
        vs = f"{best / t13:.2f}" if t13 and best else "-"
        print(f"| {dt} | {name} | {us(cudnn)} | {us(t13)} | " +
              " | ".join(us(t[v]) for v in others) +
              f" | {vs} | {ran(a[1])} | {f'{speed:.2f}' if speed else '-'} |")
    print("\nGeomean of cuDNN / auto over these layers: " +
          ", ".join(f"{dt} {geomean(v):.3f} ({len(v)})" for dt, v in sorted(speeds.items())))


def groups():
    base = load("groups/v13_cudnn.json")
    g1, g2 = load("groups/v13_groups1.json"), load("groups/v13_groups2.json")
    print("\n## One or two 16-row groups a warp (7e3d976; the rule then: two up to 2 chunks)\n")
    print("| dtype | layer | cuDNN | rule | groups 1 | groups 2 | groups 2 / groups 1 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for key in sorted(base, key=lambda k: (k[1], k[0])):
        if key[3] != "im2col_gemm_cuda" or not base[key][0]:
            continue
        c = base.get(key[:3] + ("cudnn",), (None,))[0]
        a, b = g1.get(key, (None,))[0], g2.get(key, (None,))[0]
        print(f"| {key[1]} | {key[0]} | {us(c)} | {us(base[key][0])} | {us(a)} | {us(b)} | "
              f"{f'{b / a:.2f}' if a and b else '-'} |")


def plans():
    names = ["auto_cudnn", "plan_128_1", "plan_128_2", "plan_128_3", "plan_128_4", "plan_128_6",
             "plan_256_1", "plan_256_2"]
    runs = {n: load(f"v11_plans/{n}.json") for n in names}
    print("\n## Variant 11's plans forced (9293d2b, fp16; MYCONV_GEMM_1X1_PLAN=BN:S; auto = "
          "gemm_auto_plan)\n")
    print("| layer | layout | cuDNN | " + " | ".join(n.replace("plan_", "").replace("_cudnn", "")
                                                   for n in names) + " |")
    print("| --- | --- | ---: | " + "---: | " * len(names))
    for key in sorted(runs["auto_cudnn"], key=lambda k: (k[0], k[2])):
        if key[3] != "im2col_gemm_cuda" or not runs["auto_cudnn"][key][0]:
            continue
        c = runs["auto_cudnn"].get(key[:3] + ("cudnn",), (None,))[0]
        print(f"| {key[0]} | {key[2]} | {us(c)} | " +
              " | ".join(us(runs[n].get(key, (None,))[0]) for n in names) + " |")


def first():
    v13, auto = load("first_design/v13_cudnn.json"), load("first_design/auto_cudnn.json")
    print("\n## The first design (12e3d82: 4-byte stores per column tile, two 16-row groups a "
          "warp up to 2 chunks, no loads ahead)\n")
    print("| dtype | layer | cuDNN | v13 | auto (then) |")
    print("| --- | --- | ---: | ---: | ---: |")
    for key in sorted(v13, key=lambda k: (k[1], k[0])):
        if key[3] != "im2col_gemm_cuda" or not v13[key][0]:
            continue
        c = v13.get(key[:3] + ("cudnn",), (None,))[0]
        print(f"| {key[1]} | {key[0]} | {us(c)} | {us(v13[key][0])} | "
              f"{us(auto.get(key, (None,))[0])} |")


print("# Variant 13 on the 1x1 layers of the model grids (H200, nhwc, pure, us)")
versus("tf32, fp16, bf16 at 55d8790: variant 13 beside variants 6, 10 and 11", ".", (6, 10, 11))
versus("tf32 at 2fc29da (variant 13's tf32 runs of 2 tiles; the auto rule then: IC >= 24)",
       "tf32", (6, 10))
groups()
plans()
first()
