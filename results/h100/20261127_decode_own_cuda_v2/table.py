#!/usr/bin/env python3
"""table.txt of this folder: per model, dtype and batch, the decode step of libtorch_graph (or
libtorch_eager in fp32) and own_cuda: ms per token (median), decode tokens/s and the weight
bytes per step over the step time against the measured copy bandwidth (`weights/copy`).
Run: python3 table.py DIR."""
import json, os, sys

d = sys.argv[1] if len(sys.argv) > 1 else "."
rows = {}
for f in ("own_cuda_16bit.json", "own_cuda_fp32.json"):
    for r in json.load(open(os.path.join(d, f)))["results"]:
        m = r.get("metrics") or {}
        key = (r["params"]["model"], r["dtype"], r["problem"])
        rows.setdefault(key, {})[r["backend"]] = (r["status"], m.get("decode_ms_per_token_median"),
                                                 m.get("decode_tokens_per_s"),
                                                 m.get("decode_weight_bandwidth_vs_copy"))
out = ["model          dtype case            impl            status  ms/token  tok/s     weights/copy  own_cuda/other speed"]
for key in sorted(rows):
    impls = rows[key]
    other = impls.get("libtorch_graph") or impls.get("libtorch_eager")
    for impl, (st, ms, tps, frac) in sorted(impls.items()):
        rel = ""
        if impl == "own_cuda" and other and other[1] and ms:
            rel = f"{other[1] / ms:.3f}"
        f = f"{frac:.3f}" if frac is not None else "-"
        out.append(f"{key[0]:14s} {key[1]:5s} {key[2]:15s} {impl:15s} {st:7s} "
                   f"{ms:8.3f}  {tps:8.1f}  {f:12s}  {rel}")
print("\n".join(out))
