#!/usr/bin/env python3
"""Variant 10's plan sweep: every layer of the four model grids that variant 10 takes, fp16 and
tf32 nhwc, under the automatic plan of 09989d3 (plan_0_0.json: 128-wide tiles where OC > 64) and
each forced tile width and split-K count (plan_BN_S.json, MYCONV_WGMMA_PLAN=BN:S). Prints, for
the cost model of conv/cuda/wgmma_conv_config.hpp (wgmma_conv_plan, re-stated below with its
constants), the plan it picks per case, and how that plan's measured time compares with the
fastest measured plan and with the automatic plan of 09989d3.

    python3 plan.py [FOLDER] > plan.md
"""
import collections
import glob
import json
import math
import os
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
SMS, BM, MAX_SPLITS, MIN_SLICES_PER_SPLIT = 132, 128, 8, 4
FLOPS_PER_BYTE, BN64_COST = 170.0, 0.8


def model_plan(p, dtype):
    """(bn, splits) of wgmma_conv_plan for the problem's parameters."""
    eb = 4 if dtype == "tf32" else 2
    bk = 128 // eb
    m = p["mb"] * p["oh"] * p["ow"]
    slices = p["kh"] * p["kw"] * -(-p["ic"] // bk)
    fpb = FLOPS_PER_BYTE / 2 if eb == 4 else FLOPS_PER_BYTE
    wave = 2.0 * BM * 128 * slices * bk * SMS
    partial = 8.0 * m * p["oc"] * fpb
    max_splits = max(1, min(MAX_SPLITS, slices // MIN_SLICES_PER_SPLIT))
    best = None
    for width in (64, 128):
        if width == 128 and p["oc"] <= 64:
            continue
        tiles = -(-m // BM) * -(-p["oc"] // width)
        for s in range(1, max_splits + 1):
            if s > 1 and tiles >= SMS:
                break
            t = -(-(tiles * s) // SMS) * wave * (BN64_COST if width == 64 else 1.0) / s
            t += s * partial if s > 1 else 0.0
            if best is None or t < best[0]:
                best = (t, width, s)
    return best[1], best[2]


times, params = collections.defaultdict(dict), {}
for path in sorted(glob.glob(os.path.join(folder, "plan_*.json"))):
    plan = os.path.basename(path)[5:-5]
    for r in json.load(open(path))["results"]:
        if r["status"] == "passed":
            times[(r["problem"], r["dtype"])][plan] = r["gpu_time_ms"]["median"] * 1e3
            params[(r["problem"], r["dtype"])] = r["params"]

print("# Variant 10's plan: the cost model against the sweep (H200, source 09989d3)\n")
print("| problem | dtype | model | its time (us) | fastest measured | automatic at 09989d3 |"
      " fastest / model | 09989d3 / model |")
print("| --- | --- | --- | ---: | --- | --- | ---: | ---: |")
vs_best, vs_old, unmeasured = [], [], 0
for key, t in sorted(times.items()):
    bn, s = model_plan(params[key], key[1])
    name = f"{bn}_{s}"
    if name not in t or "0_0" not in t:
        unmeasured += 1
        continue
    best = min(t, key=t.get)
    vs_best.append(t[best] / t[name])
    vs_old.append(t["0_0"] / t[name])
    print(f"| {key[0]} | {key[1]} | {bn}:{s} | {t[name]:.1f} | {best.replace('_', ':')} "
          f"{t[best]:.1f} | {t['0_0']:.1f} | {vs_best[-1]:.2f} | {vs_old[-1]:.2f} |")
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
print(f"\n{len(vs_best)} cases with the model's plan measured ({unmeasured} not: a split-K count "
      f"outside 1, 2, 4). Fastest measured / model: geomean {gm(vs_best):.3f}, lowest "
      f"{min(vs_best):.2f}; within 6%: {sum(x >= 0.94 for x in vs_best)}, within 10%: "
      f"{sum(x >= 0.9 for x in vs_best)}. Automatic at 09989d3 / model: geomean {gm(vs_old):.3f}, "
      f"{min(vs_old):.2f}-{max(vs_old):.2f}, the model's plan slower by over 3% in {sum(x < 0.97 for x in vs_old)}.")
