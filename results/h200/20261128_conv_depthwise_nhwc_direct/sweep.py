#!/usr/bin/env python3
"""8.6's shapes on MobileNet-v2's ten nhwc depthwise layers (sweep/): cuDNN's pure GPU median from
sweep/auto_cudnn.json (beside --variant auto of that build, 8.3 or 8.5 there) / ours, per shape.
A column v86_P_E_W_B_R is MYCONV_DEPTHWISE_DIRECT=P:E:W:B:R (W 0: the automatic W).

    python3 sweep.py [FOLDER] > sweep_table.txt
"""
import glob
import json
import os
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
ref, ours, cols = {}, {}, []
for f in sorted(glob.glob(os.path.join(folder, "sweep", "*.json"))):
    name = os.path.basename(f)[:-5]
    cols.append(name)
    for r in json.load(open(f))["results"]:
        key = (r["dtype"], r["problem"])
        g = (r.get("gpu_time_ms") or {}).get("median") if r.get("status") == "passed" else None
        if r["backend"] == "cudnn":
            ref[key] = g
        else:
            ours.setdefault(key, {})[name] = g
print("ratio = cuDNN / ours; auto_cudnn: --variant auto of commit 10fedcc, which ran 8.3 or 8.5 here")
print(f"{'dtype problem':48}" + "".join(f"{c[4:] if c.startswith('v86_') else c:>11}" for c in cols) + "   best")
for key, e in ours.items():
    vals = [ref[key] / e[c] if e.get(c) and ref.get(key) else None for c in cols]
    best = max((v for v in vals if v), default=0)
    cells = "".join(f"{v:11.3f}" if v else f"{'-':>11}" for v in vals)
    print(f"{key[0]:5} {key[1][:42]:42}{cells}   {best:.3f}")
