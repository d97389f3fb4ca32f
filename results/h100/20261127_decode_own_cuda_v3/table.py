#!/usr/bin/env python3
"""table.txt of this folder. Per model, dtype and case: the decode step of libtorch_graph (or
libtorch_cuda in fp32) and own_cuda (its automatic choice; v3 and v2 as asked at batch 1):
ms per token (median), decode tokens/s and the weight bytes per step over the step time against
the measured copy bandwidth (`weights/copy`), and which kernels ran. Run: python3 table.py DIR."""
import json, os, sys

d = sys.argv[1] if len(sys.argv) > 1 else "."
files = {"own_cuda_16bit.json": "", "own_cuda_fp32.json": "", "own_cuda_v3_b1.json": " v3",
         "own_cuda_v2_b1.json": " v2", "own_cuda_v3_fp32.json": " v3"}
rows = {}
for f, tag in files.items():
    for r in json.load(open(os.path.join(d, f)))["results"]:
        m = r.get("metrics") or {}
        step = (r.get("extra") or {}).get("decode_step", "")
        kind = "v3 persistent" if "persistent kernel" in step else ("v2 launches" if "kernels v2" in step else "")
        key = (r["params"]["model"], r["dtype"], r["problem"])
        rows.setdefault(key, []).append((r["backend"] + tag, r["status"], m.get("decode_ms_per_token_median"),
                                         m.get("decode_tokens_per_s"), m.get("decode_weight_bandwidth_vs_copy"), kind))
out = ["model          dtype case            impl               status  ms/token  tok/s     weights/copy  kernels"]
for key in sorted(rows):
    for impl, st, ms, tps, frac, kind in sorted(rows[key]):
        f = f"{frac:.3f}" if frac is not None else "-"
        out.append(f"{key[0]:14s} {key[1]:5s} {key[2]:15s} {impl:18s} {st:7s} "
                   f"{ms:8.3f}  {tps:8.1f}  {f:12s}  {kind}")
print("\n".join(out))
