#!/usr/bin/env python3
"""The tables of README.md, from the files beside this script:
  python3 results/h200/20261128_mlp_own_cuda_fp32/table.py > table.txt
1. The fp32 and bf16 scaling grids: each case's median GPU time per call (ms) of libtorch_graph,
   cublaslt_fused and own_cuda (its rule), own_cuda / libtorch_graph, and for fp32 own_cuda with
   each SGEMM tile and split count forced (variants/own_cuda_fp32_<forward>-<dX>-<dW>.json, or one
   setting for all three GEMMs; MYCONV_OWN_MLP_SGEMM), as a ratio to libtorch_graph.
2. The forced tiles and splits per GEMM at the dim and batch study sizes (per_gemm/, an earlier
   commit's rule in per_gemm/rule.json beside libtorch_graph).
3. The op suite's fp32 matmul (the SGEMMs) beside cuBLASLt's strict FP32 GEMM and LibTorch."""
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def times(path, key="name"):
    d = json.load(open(path))
    return {(r.get(key), r["backend"]): ((r.get("gpu_time_ms") or {}).get("median"), r["status"])
            for r in d["results"]}


def label(path):
    return os.path.basename(path)[:-5].replace("own_cuda_fp32_", "").replace("f_", "")


def scaling_table(dtype):
    main = times(os.path.join(HERE, f"scaling_{dtype}.json"))
    paths = sorted(glob.glob(os.path.join(HERE, "variants", f"own_cuda_{dtype}_*.json")))
    var = {label(p): times(p) for p in paths}
    print(f"{dtype}: median GPU ms per call; own / graph; forced settings as own / graph")
    print("| case | libtorch_graph | cublaslt_fused | own_cuda | own / graph |"
          + "".join(f" {v} |" for v in var))
    print("| --- |" + " ---: |" * (4 + len(var)))
    met = 0
    names = [n for (n, b) in main if b == "own_cuda"]
    for n in names:
        g, f, o = (main[(n, b)][0] for b in ("libtorch_graph", "cublaslt_fused", "own_cuda"))
        bad = [b for (m, b), (_, s) in main.items() if m == n and s != "passed"]
        met += o <= g
        cells = [f"{v[(n, 'own_cuda')][0] / g:.3f}" for v in var.values()]
        print(f"| {n} | {g:.4f} | {f:.4f} | {o:.4f} | {o / g:.3f}"
              f"{' FAILED ' + str(bad) if bad else ''} |" + "".join(f" {c} |" for c in cells))
    print(f"own_cuda <= libtorch_graph at {met} of {len(names)} cases\n")


def per_gemm_table():
    rule = times(os.path.join(HERE, "per_gemm", "rule.json"), "problem")
    paths = sorted(glob.glob(os.path.join(HERE, "per_gemm", "f_*.json")))
    var = {label(p): times(p, "problem") for p in paths}
    print("per GEMM (forward-dX-dW, TILE_SPLITS), own / libtorch_graph:")
    print("| problem | libtorch_graph ms | that commit's rule | " + " | ".join(var) + " |")
    print("| --- |" + " ---: |" * (2 + len(var)))
    for p in [p for (p, b) in rule if b == "own_cuda"]:
        g = rule[(p, "libtorch_graph")][0]
        cells = [f"{v[(p, 'own_cuda')][0] / g:.3f}" for v in var.values()]
        print(f"| {p} | {g:.4f} | {rule[(p, 'own_cuda')][0] / g:.3f} | " + " | ".join(cells) + " |")
    print()


def matmul_table():
    m = times(os.path.join(HERE, "gemm_fp32_default.json"), "problem")
    print("fp32 matmul, median GPU ms (cuBLASLt / ours: issue 26's >= 0.9):")
    print("| problem | own_cuda | cublaslt | libtorch_cuda | cuBLASLt / ours |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for p in [p for (p, b) in m if b == "own_cuda"]:
        o, c, t = (m[(p, b)][0] for b in ("own_cuda", "cublaslt", "libtorch_cuda"))
        print(f"| {p} | {o:.3f} | {c:.3f} | {t:.3f} | {c / o:.3f} |")


if __name__ == "__main__":
    scaling_table("fp32")
    scaling_table("bf16")
    per_gemm_table()
    matmul_table()
