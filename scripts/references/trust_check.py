#!/usr/bin/env python3
"""The trust check: are our LibTorch figures the ones a PyTorch user gets? Times a sample of a
run's libtorch_cuda cases (op and conv suites) again in Python PyTorch, on the same GPU, with the
same inputs' shapes, dtype, layout and math flags the record names, and sets our GPU median beside
Python's: ratio = ours / Python's. A ratio outside 0.97-1.03 is flagged.

Python is timed as our record was: a "pure:graph" record (R calls captured in one CUDA graph,
a sample = one replay / R) is timed by replaying a graph of the same R calls; a "pure" record
without a graph by R back-to-back calls between two events; a "real" record by one call between
events, then a synchronize. As many samples as the record took (sample_count); the median of
the samples is compared.

    scripts/references/trust_check.py RUN/results.json [--per-suite N] [--output-dir DIR] [--seed S]

Writes DIR/trust.json (one record per case) and DIR/trust.md (a table, the flagged rows first);
DIR defaults to the folder of results.json. Exit codes: 0 checked (flags are findings, not
failures), 2 bad usage or input, 77 skipped: no torch with CUDA in this Python (the reason is
printed)."""

import argparse
import json
import math
import os
import statistics
import sys

LOW, HIGH = 0.97, 1.03
MAX_SAMPLES = 5000
SUITES = ("ops", "conv")
TORCH_DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


class UsageError(Exception):
    pass


def load_records(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read {path}: {e}") from None
    records = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(records, list):
        raise UsageError(f"{path}: no 'results' list (a myconv/myops results.json is expected)")
    return doc, records


def candidates(records):
    """The records the check can time: libtorch_cuda, passed, in a suite it knows, with a GPU
    median and the parameters that rebuild the call."""
    out = []
    for r in records:
        if (r.get("backend") == "libtorch_cuda" and r.get("status") == "passed"
                and r.get("suite") in SUITES and isinstance(r.get("params"), dict)
                and (r.get("gpu_time_ms") or {}).get("median")):
            if r["suite"] == "ops" and r["params"].get("op") not in OP_CALLS:
                continue
            out.append(r)
    return out


def sample(records, per_suite):
    """Up to per_suite records of each suite, taken round-robin over its groups (ops: op and
    dtype; conv: layout and dtype), smallest problem first within a group then spread over its
    sizes, so that every op, dtype and layout is represented before any repeats; deterministic."""
    chosen = []
    for suite in SUITES:
        groups = {}
        for r in records:
            if r["suite"] != suite:
                continue
            p = r["params"]
            key = (p.get("op") or p.get("layout", ""), r.get("dtype", ""))
            groups.setdefault(key, []).append(r)
        order = []
        for key in sorted(groups):
            rs = sorted(groups[key], key=lambda r: (r.get("flop") or 0, r.get("bytes") or 0,
                                                    r.get("problem", "")))
            # spread: the smallest, the largest, then the middles
            idx = [0, len(rs) - 1] + [len(rs) * j // 4 for j in (2, 1, 3)]
            seen, picked = set(), []
            for i in idx + list(range(len(rs))):
                if i not in seen and 0 <= i < len(rs):
                    seen.add(i)
                    picked.append(rs[i])
            order.append(picked)
        depth = 0
        taken = []
        while len(taken) < per_suite and any(depth < len(g) for g in order):
            for g in order:
                if depth < len(g) and len(taken) < per_suite:
                    taken.append(g[depth])
            depth += 1
        chosen += taken
    return chosen


# The op suite's calls, as baselines/ops/libtorch_cuda.cpp makes them (its records' extra.torch_call
# names each): (inputs from params and a tensor factory) -> a callable of no arguments.
def _unary(fn):
    return lambda t, p, new: (lambda x: (lambda: fn(t, x, p)))(new(p["shape"]))


def _binary(fn, divisor=False):
    def make(t, p, new):
        a = new(p["shape"])
        b = new(p.get("rhs") or p["shape"])
        if divisor:  # magnitude in [0.5, 1.5), as ops/data.cpp makes divisors
            b = t.where(b < 0, b - 0.5, b + 0.5)
        return lambda: fn(a, b)
    return make


def _reduce(kind):
    def make(t, p, new):
        x = new(p["shape"])
        axes = tuple(p.get("axes") or ())
        if not axes:
            return {"sum": lambda: x.sum(), "mean": lambda: x.mean(), "max": lambda: x.max()}[kind]
        return {"sum": lambda: x.sum(dim=axes), "mean": lambda: x.mean(dim=axes),
                "max": lambda: x.amax(dim=axes)}[kind]
    return make


def _norm(kind):
    def make(t, p, new):
        x = new(p["shape"])
        n = p["shape"][-1]
        w = new([n])
        if kind == "layernorm":
            b = new([n])
            return lambda: t.nn.functional.layer_norm(x, (n,), w, b, 1e-5)
        return lambda: t.nn.functional.rms_norm(x, (n,), w, 1e-5)
    return make


def _concat(t, p, new):
    xs = [new(p["shape"]) for _ in range(int(p.get("inputs", 2)))]
    axis = int(p.get("axis", 0))
    return lambda: t.cat(xs, axis)


def _matmul(t, p, new):
    b, m, n, k = (int(p.get(key, 1)) for key in ("b", "m", "n", "k"))
    a = new([b, m, k] if b > 1 else [m, k])
    w = new([b, k, n] if b > 1 else [k, n])
    return lambda: t.matmul(a, w)


OP_CALLS = {
    "add": _binary(lambda a, b: a + b),
    "sub": _binary(lambda a, b: a - b),
    "mul": _binary(lambda a, b: a * b),
    "div": _binary(lambda a, b: a / b, divisor=True),
    "relu": _unary(lambda t, x, p: t.relu(x)),
    "sigmoid": _unary(lambda t, x, p: t.sigmoid(x)),
    "tanh": _unary(lambda t, x, p: t.tanh(x)),
    "gelu_erf": _unary(lambda t, x, p: t.nn.functional.gelu(x)),
    "gelu_tanh": _unary(lambda t, x, p: t.nn.functional.gelu(x, approximate="tanh")),
    "silu": _unary(lambda t, x, p: t.nn.functional.silu(x)),
    "softmax": _unary(lambda t, x, p: t.softmax(x, -1)),
    "copy": _unary(lambda t, x, p: x.clone()),
    "transpose": _unary(lambda t, x, p: x.transpose(-2, -1).contiguous()),
    "permute": _unary(lambda t, x, p: x.permute(*p["perm"]).contiguous()),
    "sum": _reduce("sum"),
    "mean": _reduce("mean"),
    "max": _reduce("max"),
    "layernorm": _norm("layernorm"),
    "rmsnorm": _norm("rmsnorm"),
    "concat": _concat,
    "matmul": _matmul,
}


def math_flags(t, record):
    """The flags our LibTorch backend set for the record (its extra fields; the dtype decides
    TF32 where the record does not say)."""
    extra = record.get("extra") or {}
    tf32 = record.get("dtype") == "tf32"
    t.backends.cuda.matmul.allow_tf32 = bool(extra.get("torch_allow_tf32_cublas", tf32))
    t.backends.cudnn.allow_tf32 = bool(extra.get("torch_allow_tf32_cudnn", tf32))
    t.backends.cudnn.benchmark = bool(extra.get("torch_cudnn_benchmark", False))
    t.backends.cudnn.deterministic = bool(extra.get("torch_cudnn_deterministic", False))


def build_call(t, record, generator):
    """A callable of no arguments doing the record's work on the GPU, with fresh random inputs
    drawn as ours are (core/random.cpp fill_random): uniform in [-1, 1), rounded to the dtype. The
    values matter to the time: a large fp16/bf16 matmul runs at the card's power limit, and its
    power depends on the operands' bits (normal inputs had been used here)."""
    p = record["params"]
    dtype = getattr(t, TORCH_DTYPES[record.get("dtype", p.get("dtype", "fp32"))])

    def new(shape):
        u = t.rand([int(s) for s in shape], generator=generator, device="cuda",
                   dtype=t.float32)
        return (u * 2 - 1).to(dtype)

    if record["suite"] == "ops":
        return OP_CALLS[p["op"]](t, p, new)
    # conv: aten::conv2d as baselines/conv/libtorch_cuda.cpp calls it (no bias)
    g = int(p.get("g", 1))
    x = new([p["mb"], p["ic"], p["ih"], p["iw"]])
    w = new([p["oc"], p["ic"] // g, p["kh"], p["kw"]])
    if p.get("layout") == "nhwc":
        x = x.contiguous(memory_format=t.channels_last)
        w = w.contiguous(memory_format=t.channels_last)
    stride = (int(p.get("sh", 1)), int(p.get("sw", 1)))
    pad = (int(p.get("ph", 0)), int(p.get("pw", 0)))
    dil = (int(p.get("dilation_h", 1)), int(p.get("dilation_w", 1)))
    return lambda: t.nn.functional.conv2d(x, w, None, stride, pad, dil, g)


def time_call(t, fn, record, samples):
    """Python's per-call GPU times (ms) in the record's timing mode."""
    mode = record.get("timing_mode", "real")
    reps = max(1, int(record.get("runs_per_sample") or 1)) if mode.startswith("pure") else 1
    for _ in range(3):  # warm-up: plans, kernel loads, allocator
        fn()
    t.cuda.synchronize()
    start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
    times = []
    if mode == "pure:graph":
        stream = t.cuda.Stream()
        stream.wait_stream(t.cuda.current_stream())
        with t.cuda.stream(stream):
            fn()
        t.cuda.current_stream().wait_stream(stream)
        graph = t.cuda.CUDAGraph()
        with t.cuda.graph(graph):
            # each call's output kept until the next one has been made, as our backends' run()
            # does (out_ = call()): two output buffers alternate, as in `for ...: y = f(x)`
            out = None
            for _ in range(reps):
                out = fn()
        graph.replay()
        t.cuda.synchronize()
        for _ in range(samples):
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / reps)
        del out
        return times
    out = None
    for _ in range(samples):
        start.record()
        for _ in range(reps):
            out = fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / reps)
    del out
    return times


def loaded_library(stem):
    """The path of the shared library `stem`* this process has mapped (Linux), else None: which
    cuBLASLt Python's torch runs, to set beside the one our programs load (`ldd myops`)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            for line in f:
                path = line.split()[-1]
                if os.path.basename(path).startswith(stem + ".so"):
                    return path
    except OSError:
        pass
    return None


def python_math(t):
    """The cuBLAS math switches Python's torch runs with (our LibTorch keeps ATen's defaults for
    the reduced-precision reductions; the record's extra names TF32)."""
    m = t.backends.cuda.matmul
    out = {}
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction"):
        try:
            out[name] = bool(getattr(m, name))
        except (AttributeError, AssertionError):  # older torch: not a switch there
            out[name] = None
    return out


def check(records, samples, seed, log=print):
    import torch as t  # imported here: the rest of the module runs without torch

    generator = t.Generator(device="cuda")
    generator.manual_seed(seed)
    device = t.cuda.get_device_name(0)
    t.ones(2, 2, device="cuda") @ t.ones(2, 2, device="cuda")  # loads cuBLAS and cuBLASLt
    cublaslt = loaded_library("libcublasLt")
    rows = []
    for i, r in enumerate(records):
        row = {"suite": r["suite"], "problem": r.get("problem"), "dtype": r.get("dtype"),
               "layout": (r.get("params") or {}).get("layout", ""),
               "timing_mode": r.get("timing_mode"), "runs_per_sample": r.get("runs_per_sample"),
               "ours_gpu_median_ms": r["gpu_time_ms"]["median"], "device": device,
               "torch_version": t.__version__, "python_cublaslt": cublaslt,
               "python_math": python_math(t)}
        try:
            py, n = python_median(t, r, generator, samples)
            row.update(python_gpu_median_ms=py, python_samples=n,
                       ratio=row["ours_gpu_median_ms"] / py if py > 0 else math.nan)
            row["flagged"] = not (LOW <= row["ratio"] <= HIGH)
        except Exception as e:  # one case's failure is a row, never the end of the check
            row.update(error=f"{type(e).__name__}: {e}"[:300], flagged=True)
        finally:
            t.cuda.empty_cache()
        rows.append(row)
        shown = f"{row['ratio']:.3f}" if "ratio" in row else row.get("error", "")
        log(f"[trust_check] {i + 1}/{len(records)} {row['suite']} {row['problem']} "
            f"{row['dtype']} {row['timing_mode']}: ours/python {shown}")
    # Python against itself: every case timed again after all the others, as our figure was
    # timed at another moment. Where Python's own repeat differs from its first figure by at
    # least as much as ours does, a flag is within the noise of timing the call twice.
    for r, row in zip(records, rows):
        if "ratio" not in row:
            continue
        try:
            again, _ = python_median(t, r, generator, samples)
            row["python_repeat_median_ms"] = again
            row["python_repeat_ratio"] = again / row["python_gpu_median_ms"]
            row["within_python_repeat"] = (
                abs(math.log(row["ratio"])) <= abs(math.log(row["python_repeat_ratio"])))
        except Exception as e:
            row["python_repeat_error"] = f"{type(e).__name__}: {e}"[:300]
        finally:
            t.cuda.empty_cache()
    return rows


def sample_count(record, samples):
    """As many samples as our record took (at least `samples`, at most MAX_SAMPLES): a GPU kept
    busy for seconds runs at other clocks than one timed for a few milliseconds (a heavy matmul's
    power draw lowers them), so the two figures are taken over the same stretch of work."""
    ours = (record.get("gpu_time_ms") or {}).get("samples")
    return min(max(samples, int(ours) if isinstance(ours, (int, float)) else 0), MAX_SAMPLES)


def python_median(t, record, generator, samples):
    """Python's GPU median (ms) of the record's call, and its sample count."""
    math_flags(t, record)
    times = time_call(t, build_call(t, record, generator), record, sample_count(record, samples))
    return statistics.median(times), len(times)


def markdown(rows, source):
    ratios = [r["ratio"] for r in rows if "ratio" in r and math.isfinite(r["ratio"])]
    flagged = [r for r in rows if r.get("flagged")]
    noise = sum(1 for r in flagged if r.get("within_python_repeat"))
    summary = (f"{len(rows)} cases, median ratio {statistics.median(ratios):.3f}, "
               if ratios else f"{len(rows)} cases, no ratio, ")
    lines = ["# Trust check: our LibTorch figures against Python PyTorch's", "",
             f"Source: `{source}`; device: {rows[0]['device'] if rows else 'n/a'}; "
             f"torch {rows[0]['torch_version'] if rows else 'n/a'}. Ratio = our GPU median / "
             f"Python's, in the record's timing mode; flagged outside {LOW}-{HIGH}. Python's "
             f"cuBLASLt: `{rows[0].get('python_cublaslt') if rows else 'n/a'}` (ours: `ldd` of "
             f"the program).", "",
             summary + f"{len(flagged)} flagged ({noise} of them within Python's own repeat).",
             "", "Python repeat = Python's median when the call is timed again after all the "
             "other cases / its first median: how much one figure moves between two moments on "
             "this GPU (clocks are not locked). A flagged ratio no farther from 1 than Python's "
             "own repeat is marked *within Python's repeat*: timing the same call twice differs "
             "as much.", ""]
    lines += ["| suite | problem | dtype | layout | timing | ours ms | python ms | ratio | "
              "python repeat | flag |",
              "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in sorted(rows, key=lambda r: (not r.get("flagged"), r["suite"], str(r["problem"]))):
        py = f"{r['python_gpu_median_ms']:.4f}" if "python_gpu_median_ms" in r else "-"
        ratio = f"{r['ratio']:.3f}" if "ratio" in r else r.get("error", "-")
        repeat = (f"{r['python_repeat_ratio']:.3f}" if "python_repeat_ratio" in r
                  else r.get("python_repeat_error", "-"))
        flag = ""
        if r.get("flagged"):
            flag = ("outside, *within Python's repeat*" if r.get("within_python_repeat")
                    else "**outside**")
        lines.append(f"| {r['suite']} | `{r['problem']}` | {r['dtype']} | {r['layout'] or '-'} | "
                     f"{r['timing_mode']} | {r['ours_gpu_median_ms']:.4f} | {py} | {ratio} | "
                     f"{repeat} | {flag} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="a run's results.json (or a program's --json file)")
    ap.add_argument("--per-suite", type=int, default=20, help="cases sampled per suite (20)")
    ap.add_argument("--samples", type=int, default=50,
                    help="timed samples per case at least (50); as many as our record took, up to "
                         f"{MAX_SAMPLES}")
    ap.add_argument("--seed", type=int, default=1, help="the inputs' random seed (1)")
    ap.add_argument("--output-dir", help="where trust.json and trust.md go (results.json's folder)")
    args = ap.parse_args(argv)
    try:
        if args.per_suite < 1 or args.samples < 1:
            raise UsageError("--per-suite and --samples take a positive count")
        _, records = load_records(args.results)
        out_dir = args.output_dir or os.path.dirname(os.path.abspath(args.results))
        if not os.path.isdir(out_dir) or not os.access(out_dir, os.W_OK):
            raise UsageError(f"output folder '{out_dir}' is not a writable folder")
    except UsageError as e:
        print(f"trust_check.py: error: {e}", file=sys.stderr)
        return 2
    chosen = sample(candidates(records), args.per_suite)
    if not chosen:
        print("trust_check.py: skipped: no passed libtorch_cuda op or conv case in "
              f"{args.results}", file=sys.stderr)
        return 77
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("torch finds no CUDA device")
    except ImportError as e:
        print(f"trust_check.py: skipped: {e}", file=sys.stderr)
        return 77
    rows = check(chosen, args.samples, args.seed)
    with open(os.path.join(out_dir, "trust.json"), "w", encoding="utf-8") as f:
        json.dump({"source": os.path.abspath(args.results), "low": LOW, "high": HIGH,
                   "cases": rows}, f, indent=1)
    text = markdown(rows, args.results)
    with open(os.path.join(out_dir, "trust.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text.split("\n\n")[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
