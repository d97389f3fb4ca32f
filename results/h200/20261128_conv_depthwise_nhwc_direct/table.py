#!/usr/bin/env python3
"""MobileNet-v2's ten depthwise layers: cuDNN's pure GPU median / ours (--variant auto), both from
one process (depthwise.json), per layout and dtype; and the sub-variant and shape auto chose.

    python3 table.py [FOLDER]   (default: this script's folder) > table.txt
"""
import json
import math
import os
import re
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rows = {}
for r in json.load(open(os.path.join(folder, "depthwise.json")))["results"]:
    layout = (r.get("params") or {}).get("layout", "nchw")
    key = (layout, r["dtype"], re.sub(r"(dt\w\w\w\w)?(nchw|nhwc)?$", "", r["problem"]))
    rows.setdefault(key, {})[r["backend"]] = r
print(f"{'layout':6} {'dtype':5} {'problem':42} {'cudnn_us':>8} {'ours_us':>8} {'ratio':>6}  choice")
summary = {}
for key in sorted(rows):
    ours, ref = rows[key].get("im2col_gemm_cuda"), rows[key].get("cudnn")
    ok = ours and ref and ours["status"] == "passed" and ref["status"] == "passed"
    if not ok:
        print(*key, "not passed")
        continue
    a, c = ours["gpu_time_ms"]["median"] * 1e3, ref["gpu_time_ms"]["median"] * 1e3
    m = re.search(r"(8\.\d [^,]*kernel, \w+, [^,]*, [^,]*)", ours["algorithm"])
    print(f"{key[0]:6} {key[1]:5} {key[2]:42} {c:8.1f} {a:8.1f} {c / a:6.3f}  {m.group(1) if m else ''}")
    summary.setdefault(key[:2], []).append(c / a)
print()
print("layout dtype  geomean  lowest  layers >= 1.0")
for (layout, dtype), v in sorted(summary.items()):
    g = math.exp(sum(map(math.log, v)) / len(v))
    print(f"{layout:6} {dtype:5} {g:8.3f} {min(v):7.3f}  {sum(x >= 1 for x in v)} of {len(v)}")
