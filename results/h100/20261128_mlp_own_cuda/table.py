#!/usr/bin/env python3
"""The tables of README.md, from the files beside this script:
  python3 results/h100/20261128_mlp_own_cuda/table.py
1. The bf16 scaling grid: each case's median GPU time per call (ms) of libtorch_graph,
   cublaslt_fused and own_cuda (its rule), own_cuda / libtorch_graph, and own_cuda with each GEMM
   path forced (variants/own_cuda_*.json, MYCONV_OWN_MLP_GEMM).
2. ncu, each kernel alone (us, mean over the launches of a call): own_cuda's three GEMMs per layer
   and step under each path, and cuBLASLt's (variants/ncu_*_cublaslt_fused.log)."""
import csv
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = ["wgmma", "wgmma64", "small_32_1", "small_64_1"]


def times(path):
    d = json.load(open(path))
    return {(r.get("name"), r["backend"]): ((r.get("gpu_time_ms") or {}).get("median"), r["status"])
            for r in d["results"]}


def scaling_table():
    main = times(os.path.join(HERE, "scaling_bf16.json"))
    var = {v: times(os.path.join(HERE, "variants", f"own_cuda_{v}.json")) for v in VARIANTS}
    print("| case | libtorch_graph | cublaslt_fused | own_cuda | own / graph | "
          + " | ".join(f"own {v}" for v in VARIANTS) + " |")
    print("| --- |" + " ---: |" * (4 + len(VARIANTS)))
    names = [n for (n, b) in main if b == "own_cuda"]
    for n in names:
        g, f, o = (main[(n, b)][0] for b in ("libtorch_graph", "cublaslt_fused", "own_cuda"))
        bad = [b for (m, b), (_, s) in main.items() if m == n and s != "passed"]
        cells = [f"{var[v][(n, 'own_cuda')][0]:.4f}" if (n, "own_cuda") in var[v] else "-"
                 for v in VARIANTS]
        print(f"| {n} | {g:.4f} | {f:.4f} | {o:.4f} | {o / g:.3f}{' FAILED ' + str(bad) if bad else ''} | "
              + " | ".join(cells) + " |")


def kernels(path):
    """{role: (launches, mean us)} of own_cuda's GEMMs (forward: B K-major; dX: the dgelu
    epilogue; dW: the others), or of cuBLASLt's kernels by name."""
    lines = open(path).read().splitlines()
    start = [i for i, l in enumerate(lines) if l.startswith('"ID"')][0]
    rows = list(csv.reader(lines[start:]))
    h = {k: i for i, k in enumerate(rows[0])}
    out = {}
    for x in rows[2:]:
        if len(x) < len(rows[0]):
            continue
        name = x[h["Kernel Name"]]
        t = float(x[h["gpu__time_duration.sum"]].replace(",", "")) / 1000
        m = re.search(r"gemm_(sm90|small)_kernel<(\d+), (?:0, )?(\d+), (\d)", name)
        if "gemm_sm90_kernel" in name or "gemm_small_kernel" in name:
            kmajor = re.search(r"gemm_sm90_kernel<\d+, (?:true|false|0|1), (1|true)", name) or \
                re.search(r"gemm_small_kernel<\d+, \d+, (1|true)", name)
            role = "forward" if kmajor else "dX" if "Dgelu" in name else "dW"
        elif "nvjet" in name or "gemmk1" in name or "splitKreduce" in name or "epilogue::" in name:
            role = name.split("(")[0].replace("void ", "")[:48]
        else:
            continue
        n, s = out.get(role, (0, 0.0))
        out[role] = (n + 1, s + t)
    return {k: (n, s / n) for k, (n, s) in out.items()}


def ncu_table():
    shapes = ["d256l4b256s2", "d256l4b1280s2", "d1024l4b256s2", "d1280l4b256s2"]
    print("| problem | path | forward us | dW us | dX (dGELU) us |")
    print("| --- | --- | ---: | ---: | ---: |")
    for s in shapes:
        for v, path in [("rule", os.path.join(HERE, f"ncu_{s}_rule.log"))] + [
                (v, os.path.join(HERE, "variants", f"ncu_{s}_{v}.log")) for v in VARIANTS]:
            k = kernels(path)
            cell = lambda r: f"{k[r][1]:.2f}" if r in k else "-"
            print(f"| mlp:{s}:bf16 | {v} | {cell('forward')} | {cell('dW')} | {cell('dX')} |")
    print()
    print("cuBLASLt's kernels (cublaslt_fused), us:")
    for s in shapes:
        k = kernels(os.path.join(HERE, "variants", f"ncu_{s}_cublaslt_fused.log"))
        print(f"- mlp:{s}:bf16: " + "; ".join(f"{r} {t:.2f} (x{n})" for r, (n, t) in k.items()))


if __name__ == "__main__":
    scaling_table()
    print()
    ncu_table()
