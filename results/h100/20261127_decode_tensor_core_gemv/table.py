#!/usr/bin/env python3
"""table.txt of this folder. Per model, dtype and case: libtorch_graph and own_cuda (its automatic
choice), and at batch 1 in bf16 own_cuda with the GEMV asked for (tensor cores, SIMT, or the
persistent step v3): ms per token (median), decode tokens/s, the weight bytes per step over the
step time against the measured copy bandwidth (`weights/copy`) and which kernels ran; then issue
28's targets against these numbers. Run: python3 table.py DIR."""
import json, os, sys

d = sys.argv[1] if len(sys.argv) > 1 else "."
files = {"own_cuda_16bit.json": "", "own_cuda_fp32.json": "", "ab_b1_tensor_core.json": " tensor-core",
         "ab_b1_simt.json": " SIMT", "ab_b1_v3.json": " v3"}


def kernels(step):
    if "persistent kernel" in step:
        return "v3 persistent"
    if "tensor-core GEMV" in step:
        return "v2, tensor-core GEMV"
    if "SIMT GEMV" in step:
        return "v2, SIMT GEMV"
    return "v2" if "kernels v2" in step else ""


rows, by = {}, {}
for f, tag in files.items():
    for r in json.load(open(os.path.join(d, f)))["results"]:
        m = r.get("metrics") or {}
        key = (r["params"]["model"], r["dtype"], r["problem"])
        impl = r["backend"] + tag
        row = (impl, r["status"], m.get("decode_ms_per_token_median"), m.get("decode_tokens_per_s"),
               m.get("decode_weight_bandwidth_vs_copy"), kernels((r.get("extra") or {}).get("decode_step", "")))
        rows.setdefault(key, []).append(row)
        by[key + (impl,)] = row
num = lambda v, f: format(v, f) if v is not None else "-"
out = ["model          dtype case            impl                   status  ms/token  tok/s     weights/copy  kernels"]
for key in sorted(rows):
    for impl, st, ms, tps, frac, kind in sorted(rows[key]):
        out.append(f"{key[0]:14s} {key[1]:5s} {key[2]:15s} {impl:22s} {st:7s} "
                   f"{num(ms, '8.3f')}  {num(tps, '8.1f')}  {num(frac, '.3f'):12s}  {kind}")
out += ["", "Issue 28's targets (own_cuda, its automatic choice):",
        "batch 1, weight bytes per step / step time against the copy bandwidth:"]
target = {"llama-3.2-1b": 0.70, "qwen2-0.5b": 0.60, "gpt2": 0.40}
for model, t in target.items():
    for dt in ("bf16", "fp16"):
        r = by.get((model, dt, "mb1in128out32", "own_cuda"))
        if r:
            out.append(f"  {model:14s} {dt}: {r[4]:.3f} (target {t:.2f}: {'met' if r[4] >= t else 'missed'})")
out.append("batch 8 and 16, decode tokens/s of own_cuda over libtorch_graph's:")
for model in target:
    for dt in ("bf16", "fp16"):
        for b in (8, 16):
            case = f"mb{b}in128out32"
            o, g = by.get((model, dt, case, "own_cuda")), by.get((model, dt, case, "libtorch_graph"))
            if o and g:
                q = o[3] / g[3]
                out.append(f"  {model:14s} {dt} batch {b:2d}: {q:.3f} (target 1.0: {'met' if q >= 1 else 'missed'})")
print("\n".join(out))
