#!/usr/bin/env python3
"""Issue 32's conv targets over this folder's runs: cuDNN's GPU median / ours (--variant auto) for
the same problem, dtype, layout and timing mode, both measured in one process. A case that did not
pass counts as missing (the target then not met), never dropped.

    python3 targets.py [FOLDER] > targets.md

Sets: every file here at 24d2ce5, from one device call (resnet50.json in pure and real timing,
the others pure); MobileNet-v2's ten depthwise layers
are the `_dw` and `_dw_s2` problems of mobilenet_v2.json.
"""
import json
import math
import os
import re
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
DTYPES = ("fp32", "tf32", "fp16", "bf16")


def load(path, depthwise=False):
    """{(problem, dtype, layout, mode): {backend: gpu median or None}}; depthwise: the `_dw` and `_dw_s2` ones."""
    out = {}
    for r in json.load(open(path))["results"]:
        if depthwise and "_dw" not in (r.get("name") or ""):
            continue
        layout = (r.get("params") or {}).get("layout", "nchw")
        mode = (r.get("timing_mode") or "").split(":")[0]
        prob = re.sub(r"(dt(fp32|tf32|fp16|bf16))?(nchw|nhwc)?$", "", r["problem"])
        g = (r.get("gpu_time_ms") or {}).get("median") if r.get("status") == "passed" else None
        out.setdefault((prob, r["dtype"], layout, mode), {})[r["backend"]] = g
    return out


def cells(times):
    """{(dtype, layout, mode): [speed or None]}."""
    out = {}
    for (prob, dt, layout, mode), b in sorted(times.items()):
        ours, ref = b.get("im2col_gemm_cuda"), b.get("cudnn")
        out.setdefault((dt, layout, mode), []).append(ref / ours if ours and ref else None)
    return out


def stats(v):
    ok = [x for x in v if x]
    g = math.exp(sum(map(math.log, ok)) / len(ok)) if ok else 0.0
    return g, (min(ok) if ok else 0.0), sum(x >= 1 for x in ok), len(v) - len(ok), len(v)


def table(title, path, want, depthwise=False):
    print(f"\n## {title}\n\n`{os.path.relpath(path, folder)}`; target: {want}\n")
    print("| dtype | layout | timing | problems | geomean | lowest | >= 1.0 | missing |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    c = cells(load(path, depthwise))
    for key in sorted(c, key=lambda k: (DTYPES.index(k[0]), k[1], k[2])):
        g, lo, n1, miss, n = stats(c[key])
        print(f"| {key[0]} | {key[1]} | {key[2]} | {n} | {g:.3f} | {lo:.3f} | {n1} | {miss} |")



print("# Issue 32's conv targets, H200 (cuDNN's GPU median / ours, one process per file)")
print("\n`python3 targets.py` in this folder. Targets: ResNet-50 every dtype and layout geomean >= 1.0"
      " and no layer < 0.8 (pure); MobileNet-v2's depthwise layers each >= 1.0 (fp32/fp16/bf16, both"
      " layouts); VGG-16, MobileNet-v2, Inception-v3 geomean >= 1.0 pure and >= 0.9 real, every dtype"
      " and layout; the seed grid faster than cuDNN on all 9 cells.")
table("ResNet-50 (6 layers)", os.path.join(folder, "resnet50.json"),
      "geomean >= 1.0, lowest >= 0.8 (pure)")
table("VGG-16 (9 layers)", os.path.join(folder, "vgg16.json"), "geomean >= 1.0 (pure)")
table("Seed grid (9 cells)", os.path.join(folder, "seed.json"), "9 of 9 >= 1.0")
table("MobileNet-v2's depthwise layers (10)", os.path.join(folder, "mobilenet_v2.json"),
      "each >= 1.0", depthwise=True)
table("MobileNet-v2, all 30 distinct layers", os.path.join(folder, "mobilenet_v2.json"),
      "geomean >= 1.0 (pure)")
table("Inception-v3, 43 distinct layers", os.path.join(folder, "inception_v3.json"),
      "geomean >= 1.0 (pure)")
