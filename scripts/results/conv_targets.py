#!/usr/bin/env python3
"""Issue 14's conv targets, read from result files: our conv's and Halide CUDA's speed against
cuDNN's on the named shape sets, each target with its measured value and whether it is met.

Speed = cuDNN's GPU median / the backend's GPU median, for the same problem, dtype and layout
(pure timing is the caller's choice: the run's own). A problem with no passed pair is listed as
missing, never dropped from a geomean silently: the target then counts as not met.

    python3 scripts/results/conv_targets.py RESULTS.json [RESULTS.json ...] [--layout nchw]

Targets (issue 14; the shape sets are experiments/shapes/*.txt):
  ResNet-50, tf32/fp16/bf16: geomean >= 0.8 and no layer below 0.6; fp32: geomean >= 0.8 and
  res3_3x3 > 0.7. MobileNet-v2's depthwise layers (groups = channels), fp32 and fp16: each >= 0.8.
  Halide CUDA fp32 on ResNet-50 + VGG-16: geomean >= 0.5. Seed grid: ours faster than cuDNN on
  every cell (each dtype present).
Exit codes: 0 printed (met or not), 2 bad input (one line on stderr).
"""

import argparse
import json
import math
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OURS, REF, HALIDE = "im2col_gemm_cuda", "cudnn", "halide_cuda"


def fail(msg):
    print(f"conv_targets.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def shape_set(name):
    """[(label, descriptor)] of experiments/shapes/NAME.txt."""
    out = []
    with open(os.path.join(ROOT, "experiments", "shapes", name + ".txt"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r'(.*?)n"([^"]*)"', line)
            out.append((m.group(2), m.group(1)) if m else (line, line))
    return out


def load(paths):
    """{(problem, dtype, layout, backend): gpu median ms} of the passed results."""
    times = {}
    for p in paths:
        try:
            with open(p, encoding="utf-8") as f:
                doc = json.load(f)
            results = doc["results"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            fail(f"cannot read results from '{p}': {e}")
        for r in results:
            g = r.get("gpu_time_ms")
            med = g.get("median") if isinstance(g, dict) else None
            if r.get("status") != "passed" or not med:
                continue
            layout = (r.get("params") or {}).get("layout", "nchw")
            # The descriptor without its dtype and layout tokens (benchdnn's grammar writes them
            # where they differ from fp32 and nchw): the shape files' form.
            shape = re.sub(r"(dt(fp32|tf32|fp16|bf16))?(nchw|nhwc)?$", "", r.get("problem", ""))
            times[(shape, r.get("dtype"), layout, r.get("backend"))] = med
    return times


def speeds(times, shapes, dtype, layout, backend):
    """[(label, speed or None)] over a shape set."""
    out = []
    for label, desc in shapes:
        ref = times.get((desc, dtype, layout, REF))
        mine = times.get((desc, dtype, layout, backend))
        out.append((label, ref / mine if ref and mine else None))
    return out


def geomean(values):
    vals = [v for v in values if v is not None]
    if not vals or len(vals) != len(values):
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def fmt(v):
    return "missing" if v is None else f"{v:.3f}"


def verdict(ok):
    return "met" if ok else "**missed**"


def targets(times, layouts, dtypes):
    """Markdown lines: one table row per target and a per-layer table for the depthwise layers."""
    rows = ["| target | layout | dtype | measured | verdict |", "| --- | --- | --- | --- | --- |"]
    resnet = shape_set("resnet50")
    present = {(k[1], k[2]) for k in times}
    for layout in layouts:
        for dt in dtypes:
            if (dt, layout) not in present:
                continue
            s = speeds(times, resnet, dt, layout, OURS)
            g = geomean([v for _, v in s])
            rows.append(f"| ResNet-50 geomean >= 0.8 | {layout} | {dt} | {fmt(g)} | "
                        f"{verdict(g is not None and g >= 0.8)} |")
            if dt == "fp32":
                r3 = dict(s).get("res3_3x3")
                rows.append(f"| ResNet-50 res3_3x3 > 0.7 | {layout} | {dt} | {fmt(r3)} | "
                            f"{verdict(r3 is not None and r3 > 0.7)} |")
            else:
                known = [(v, k) for k, v in s if v is not None]
                low = min(known) if known else (None, "-")
                ok = len(known) == len(s) and low[0] >= 0.6
                rows.append(f"| ResNet-50 no layer < 0.6 | {layout} | {dt} | "
                            f"{fmt(low[0])} ({low[1]}) | {verdict(ok)} |")
    dw = [(k, d) for k, d in shape_set("mobilenet_v2") if "_dw" in k]
    heads = [f"{dt} {lay}" for lay in layouts for dt in ("fp32", "fp16")]
    table = ["| layer | " + " | ".join(heads) + " |", "| --- |" + " ---: |" * (2 * len(layouts))]
    per = {}
    for layout in layouts:
        for dt in ("fp32", "fp16"):
            if (dt, layout) not in present:
                continue
            s = speeds(times, dw, dt, layout, OURS)
            per[(dt, layout)] = dict(s)
            n_ok = sum(1 for _, v in s if v is not None and v >= 0.8)
            worst = min(((v, k) for k, v in s if v is not None), default=(None, "-"))
            rows.append(f"| depthwise, each of {len(s)} layers >= 0.8 | {layout} | {dt} | "
                        f"{n_ok} of {len(s)} (lowest {fmt(worst[0])}, {worst[1]}) | "
                        f"{verdict(n_ok == len(s))} |")
    for label, _ in dw:
        table.append(f"| {label} | " + " | ".join(
            fmt(per.get((dt, lay), {}).get(label)) for lay in layouts for dt in ("fp32", "fp16")) +
            " |")
    if ("fp32", "nchw") in present:
        hs = speeds(times, shape_set("resnet50") + shape_set("vgg16"), "fp32", "nchw", HALIDE)
        g = geomean([v for _, v in hs])
        rows.append(f"| Halide CUDA, ResNet-50 + VGG-16 geomean >= 0.5 | nchw | fp32 | {fmt(g)} | "
                    f"{verdict(g is not None and g >= 0.5)} |")
    seed = shape_set("seed")
    for layout in layouts:
        for dt in dtypes:
            if (dt, layout) not in present:
                continue
            s = speeds(times, seed, dt, layout, OURS)
            wins = sum(1 for _, v in s if v is not None and v > 1.0)
            if all(v is None for _, v in s):
                continue
            low = min(((v, k) for k, v in s if v is not None), default=(None, "-"))
            rows.append(f"| seed grid: faster than cuDNN on all {len(s)} | {layout} | {dt} | "
                        f"{wins} of {len(s)} (lowest {fmt(low[0])}, {low[1]}) | "
                        f"{verdict(wins == len(s))} |")
    return rows, table


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("results", nargs="+", help="results.json files (one run or several)")
    ap.add_argument("--layout", action="append", choices=["nchw", "nhwc"],
                    help="layouts to report (default: both, where present)")
    a = ap.parse_args()
    times = load(a.results)
    if not times:
        fail("no passed result with a GPU median in " + ", ".join(a.results))
    layouts = a.layout or ["nchw", "nhwc"]
    rows, table = targets(times, layouts, ["fp32", "tf32", "fp16", "bf16"])
    print(f"Made by `python3 scripts/results/conv_targets.py {' '.join(a.results)}`; speed = "
          "cuDNN's GPU median / ours (Halide's for its row).\n")
    print("\n".join(rows))
    print("\nDepthwise layers (MobileNet-v2), speed against cuDNN:\n")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
