#!/usr/bin/env python3
"""The table of README.md, from the JSON files beside this script:
  python3 results/h200/20261128_gemm_variant_search/table.py > table.txt
Per problem: cuBLASLt's median GPU ms, ours (the variant --variant search chose) and cuBLASLt /
ours (issue 26's targets: >= 0.95 for fp16/bf16 at 4096^3 and 8192^3, >= 0.9 for tf32 and for
fp32 on CUDA cores, >= 0.8 for m3000 n5000 k1000, m4096 n11008 k4096 and m8 n4096 k4096), the
search's compile time and each candidate's median (ms) as the search timed it."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def rows(name):
    d = json.load(open(os.path.join(HERE, name)))
    by = {}
    for r in d["results"]:
        by.setdefault(r["problem"], {})[r["backend"]] = r
    return by


def med(r):
    return (r.get("gpu_time_ms") or {}).get("median")


print("| problem | cuBLASLt ms | ours ms | chosen | cuBLASLt / ours | search compile ms | "
      "candidates (variant: ms) |")
print("| --- | ---: | ---: | --- | ---: | ---: | --- |")
for f in ("gemm_search_16bit.json", "gemm_search_fp32.json"):
    for p, b in rows(f).items():
        o, c = b["own_cuda"], b["cublaslt"]
        ms = (o.get("extra") or {}).get("search_median_ms", {})
        chosen = o["algorithm"].split(" ")[0]
        cand = ", ".join(f"{k}: {v:.3f}" for k, v in ms.items())
        print(f"| {p} | {med(c):.4f} | {med(o):.4f} | {chosen} | {med(c) / med(o):.3f} | "
              f"{o.get('compile_time_ms') or 0:.0f} | {cand} |"
              + ("" if o["status"] == c["status"] == "passed" else " NOT PASSED"))
