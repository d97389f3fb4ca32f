#!/usr/bin/env python3
"""The --variant search runs of this folder: every candidate's median per case
(extra.search_median_ms, five timed calls after a warm-up, each a launch as real timing has it),
summarized per set, dtype and layout: how often each variant was fastest, and the cases with 16-32
output channels per group, where variant 7's rule was measured (small_direct_preferred in
conv/cuda/variant_choice.cpp).

    python3 search.py [FOLDER] > search.md
"""
import collections
import glob
import json
import os
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def runs(pattern):
    for path in sorted(glob.glob(os.path.join(folder, pattern))):
        for r in json.load(open(path))["results"]:
            t = (r.get("extra") or {}).get("search_median_ms")
            if r.get("status") == "passed" and t:
                yield os.path.relpath(path, folder), r, t


def wins(pattern, title):
    print(f"\n## {title}\n")
    print("| file | dtype | layout | cases | fastest (count) |")
    print("| --- | --- | --- | ---: | --- |")
    cells = collections.defaultdict(collections.Counter)
    for path, r, t in runs(pattern):
        cells[(path, r["dtype"], r["params"]["layout"])][min(t, key=t.get)] += 1
    for (path, dt, layout), c in sorted(cells.items()):
        text = ", ".join(f"{v} {n}" for v, n in c.most_common())
        print(f"| `{path}` | {dt} | {layout} | {sum(c.values())} | {text} |")


def small_oc():
    print("\n## Dense layers with 9-32 output channels: variant 7 against the fastest other\n")
    print("| file | problem | dtype | layout | v7 (us) | fastest other (us) | v7 / it |")
    print("| --- | --- | --- | --- | ---: | --- | ---: |")
    for path, r, t in runs("search_*.json"):
        p = r["params"]
        if p["g"] != 1 or not 8 < p["oc"] <= 32 or "v7" not in t:
            continue
        other = min((v for v in t if v != "v7"), key=t.get)
        print(f"| `{path}` | {r['problem']} | {r['dtype']} | {p['layout']} | {t['v7'] * 1e3:.1f} | "
              f"{other} {t[other] * 1e3:.1f} | {t['v7'] / t[other]:.2f} |")


print("# --variant search over the model grids (H200)")
wins("search_*.json", "At b141437, every dtype and layout")
wins("part_slices/search_*.json", "At 1d95b81 (variant 10 on part slices), tf32/fp16/bf16")
small_oc()
