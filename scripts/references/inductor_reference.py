#!/usr/bin/env python3
"""The conv suite's compiler reference: PyTorch Inductor (`torch.compile`) on each conv problem of
a run, from Python, in the conv suite's result schema (results/README.md), so that the conv report
sets it beside Halide's JIT with its compile time.

Two backends, one per mode, so that a problem's two rows keep distinct case keys and report labels:
  torch_inductor               torch.compile(conv, mode="default")
  torch_inductor_max_autotune  torch.compile(conv, mode="max-autotune") (Triton templates searched
                               against the ATen/cuDNN call; CUDA graphs on)
where conv(x, w) = torch.nn.functional.conv2d(x, w, None, stride, padding, dilation, groups): the
call baselines/conv/libtorch_cuda.cpp makes, no bias.

Per problem and mode:
  compile_time_ms  the first call, synchronized: Dynamo's trace, Inductor's code generation, the
                   Triton compiles and (max-autotune) the search, plus one execution. torch.compile
                   compiles lazily, so the first call is where a user pays it. torch._dynamo.reset()
                   before each compile, and a fresh TORCHINDUCTOR_CACHE_DIR per process: nothing of
                   an earlier run is reused (a kernel compiled for an earlier problem of the same
                   process may be).
  first_run_ms     the second call, synchronized (the first that compiles nothing).
  gpu_time_ms ...  core's sampling (core/measure.cpp): --warmup calls, then samples of one call
                   each (timing mode "real") until the GPU median's cv <= --target-cv after
                   --min-time-ms and --min-iters, or --max-time-ms / --max-iters; CUDA events around
                   the call, then a synchronize; summaries as core/stats.cpp (Tukey 1.5 IQR).
  correctness      the compiled call's output against a float64 PyTorch conv2d (ATen) of the same
                   inputs on the same device, with core's tolerance for the dtype
                   (core/compare.cpp dot_tolerance: rtol = 8 u_out, atol = 8 rms(ref) (u_in +
                   sqrt(k) 16 u_fp32), k = ic/g*kh*kw). Inputs: uniform in [-1, 1) rounded to the
                   dtype, as myconv fills them (core/random.cpp), from torch's generator (--seed).
tf32 is FP32 tensors with TF32 allowed in cuDNN and cuBLAS; fp32 with it off (as libtorch_cuda).

Where torch does not import, has no torch.compile, or finds no CUDA device, every problem is
recorded `skipped` with that reason (exit 0): the run goes on. JAX, the seed's other compiler row,
has no package this project can install (docs/sweeps.md).

  scripts/references/inductor_reference.py --cases RUN/cases.jsonl --output FILE.json
      [--device cuda|cpu] [--modes default,max-autotune] [--warmup N] [--min-iters N]
      [--max-iters N] [--min-time-ms X] [--max-time-ms X] [--target-cv X] [--seed S] [--myconv BIN]

--cases takes a run's cases.jsonl (myconv --list-cases lines) or a results.json; its conv
problems on --device are timed once each, in order. --device cpu exists to test the plumbing on a
machine without a GPU. Exit 2 with one line on bad input.
"""

import argparse
import json
import math
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time

BACKENDS = {"default": "torch_inductor", "max-autotune": "torch_inductor_max_autotune"}
TORCH_DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}
# core/dtype.cpp unit_roundoff
UNIT_ROUNDOFF = {"fp32": 2.0 ** -24, "tf32": 2.0 ** -11, "fp16": 2.0 ** -11, "bf16": 2.0 ** -8}
# core/measure.hpp MeasureConfig defaults
MEASURE_DEFAULTS = {"warmup": 3, "min_iters": 5, "max_iters": 10000, "min_time_ms": 100.0,
                    "max_time_ms": 2000.0, "target_cv": 0.02}
SUMMARY_RULE = "tukey_1.5iqr"


class UsageError(Exception):
    pass


# ---- the problems of a run ---------------------------------------------------------------------

def load_problems(path, device):
    """The distinct conv problems (problem, name) of a cases.jsonl or results.json on `device`,
    in order: [{problem, name, dtype, params, flop, bytes}]."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UsageError(f"--cases: cannot read {path}: {e.strerror}") from None
    records = None
    try:
        doc = json.loads(text)
        if isinstance(doc, dict) and isinstance(doc.get("results"), list):
            records = doc["results"]
    except ValueError:
        pass
    if records is None:
        records = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                raise UsageError(f"--cases: {path}:{n} is not a JSON line (cases.jsonl or "
                                 "results.json expected)") from None
    out, seen = [], set()
    for r in records:
        if not isinstance(r, dict) or r.get("suite", "conv") != "conv":
            continue
        params = r.get("params")
        if r.get("device") != device or not isinstance(params, dict) or not r.get("problem"):
            continue
        key = (r["problem"], r.get("name", ""))
        if key in seen:
            continue
        needed = ("mb", "ic", "ih", "iw", "oc", "kh", "kw")
        if any(not isinstance(params.get(k), int) for k in needed):
            raise UsageError(f"--cases: problem '{r['problem']}' lacks params {needed}")
        seen.add(key)
        dtype = r.get("dtype") or params.get("dtype", "fp32")
        if dtype not in TORCH_DTYPES:
            raise UsageError(f"--cases: problem '{r['problem']}' has unknown dtype '{dtype}'")
        out.append({"problem": r["problem"], "name": r.get("name", ""), "dtype": dtype,
                    "params": params, "flop": r.get("flop") or 0.0, "bytes": r.get("bytes") or 0.0})
    return out


# ---- core's numbers, in Python -----------------------------------------------------------------

def quantile_sorted(v, q):
    """core/stats.cpp quantile_sorted: linear between closest ranks."""
    if not v:
        return 0.0
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summarize(samples):
    """core/stats.cpp summarize: Tukey's 1.5 IQR fences from 4 samples on, then the figures of the
    kept samples; `samples` counts all, `outliers` the rejected."""
    v = sorted(samples)
    kept = v
    if len(v) >= 4:
        q1, q3 = quantile_sorted(v, 0.25), quantile_sorted(v, 0.75)
        lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
        kept = [x for x in v if lo <= x <= hi]
    s = {"median": 0.0, "min": 0.0, "mean": 0.0, "max": 0.0, "p10": 0.0, "p90": 0.0,
         "stddev": 0.0, "cv": 0.0, "samples": len(v), "outliers": len(v) - len(kept),
         "outlier_rule": SUMMARY_RULE}
    if not kept:
        return s
    n = len(kept)
    mean = sum(kept) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in kept) / (n - 1)) if n > 1 else 0.0
    s.update(median=quantile_sorted(kept, 0.5), min=kept[0], mean=mean, max=kept[-1],
             p10=quantile_sorted(kept, 0.1), p90=quantile_sorted(kept, 0.9), stddev=sd,
             cv=sd / mean if mean else 0.0)
    return s


def dot_tolerance(dtype, k, ref_rms):
    """core/compare.cpp dot_tolerance: {atol, rtol} of a dot-product output of reduction k."""
    c = 8.0
    u_acc = 16 * UNIT_ROUNDOFF["fp32"]
    u_in = UNIT_ROUNDOFF["tf32"] if dtype == "tf32" else 0.0
    u_out = UNIT_ROUNDOFF["fp32" if dtype == "tf32" else dtype]
    return {"atol": c * ref_rms * (u_in + math.sqrt(max(k, 1)) * u_acc), "rtol": c * u_out}


def sample(run, sync, timer, cfg, clock=time.perf_counter, thread_clock=time.thread_time):
    """core/measure.cpp sample(): warm-up, then one call per sample until converged, max_time or
    max_iters. run() enqueues one call; sync() waits for it; timer (or None) is a device timer with
    start(), stop() and elapsed_ms() (after sync). Returns ({figure: [ms]}, stop_reason)."""
    for _ in range(cfg["warmup"]):
        run()
        sync()
    s = {"host": [], "total": [], "thread_cpu": [], "device": []}
    primary = s["device"] if timer else s["total"]
    next_check = max(cfg["min_iters"], 2)
    phase = clock()
    while True:
        c0, w0 = thread_clock(), clock()
        if timer:
            timer.start()
        run()
        if timer:
            timer.stop()
        host = clock() - w0
        sync()
        total = clock() - w0
        s["host"].append(host * 1e3)
        s["total"].append(total * 1e3)
        s["thread_cpu"].append((thread_clock() - c0) * 1e3)
        if timer:
            s["device"].append(timer.elapsed_ms())
        elapsed = (clock() - phase) * 1e3
        n = len(s["total"])
        if n >= cfg["max_iters"]:
            return s, "max_iters"
        if elapsed >= cfg["max_time_ms"] and n >= 2:
            return s, "max_time"
        if elapsed >= cfg["min_time_ms"] and n >= next_check:
            next_check = n + 1 + n // 10
            if summarize(primary)["cv"] <= cfg["target_cv"]:
                return s, "converged"


# ---- the records -------------------------------------------------------------------------------

def record(prob, mode, device, torch_version, command):
    return {"suite": "conv", "backend": BACKENDS[mode], "device": device,
            "problem": prob["problem"], "name": prob["name"], "dtype": prob["dtype"],
            "status": "passed", "reason": "",
            "algorithm": f"torch.compile(conv2d, mode=\"{mode}\") (Inductor)",
            "workspace_bytes": None, "compile_time_ms": None, "first_run_ms": None,
            "cpu_time_ms": None, "gpu_time_ms": None, "total_time_ms": None,
            "thread_cpu_time_ms": None, "stop_reason": "", "timing_mode": "real",
            "runs_per_sample": 1, "cold_cache": False, "clocks": None, "throttled": None,
            "correctness": None, "flop": prob["flop"], "bytes": prob["bytes"],
            "gflop_per_s": None, "gbyte_per_s": None, "params": prob["params"],
            "extra": {"torch_compile_mode": mode, "torch_version": torch_version,
                      "compile_includes": "the first call: Dynamo trace, Inductor codegen, Triton "
                                          "compiles (max-autotune: the search) and one execution",
                      "first_run_is": "the second call, synchronized",
                      "reference": "float64 torch.nn.functional.conv2d (ATen) of the same inputs "
                                   "on the same device"},
            "command": command}


def skipped_document(problems, modes, device, reason, command, system):
    results = []
    for prob in problems:
        for mode in modes:
            r = record(prob, mode, device, None, command)
            r.update(status="skipped", reason=reason)
            results.append(r)
    return {"schema_version": 2, "system": system, "results": results}


def torch_missing(device):
    """(torch module, None) where torch imports with torch.compile and (cuda) a device; else
    (None, why) in one line."""
    try:
        import torch
    except ImportError as e:
        return None, f"{sys.executable} cannot import torch ({e})"
    if not hasattr(torch, "compile"):
        return None, (f"torch {torch.__version__} has no torch.compile (Inductor needs "
                      "PyTorch 2.0 or later)")
    if device == "cuda" and not torch.cuda.is_available():
        return None, f"torch {torch.__version__} finds no CUDA device"
    return torch, None


# ---- one problem -------------------------------------------------------------------------------

class EventTimer:
    """CUDA events on the current stream around one call."""

    def __init__(self, torch):
        self.start_event = torch.cuda.Event(enable_timing=True)
        self.stop_event = torch.cuda.Event(enable_timing=True)

    def start(self):
        self.start_event.record()

    def stop(self):
        self.stop_event.record()

    def elapsed_ms(self):
        return self.start_event.elapsed_time(self.stop_event)


def conv_args(p):
    return ((int(p.get("sh", 1)), int(p.get("sw", 1))), (int(p.get("ph", 0)), int(p.get("pw", 0))),
            (int(p.get("dilation_h", 1)), int(p.get("dilation_w", 1))), int(p.get("g", 1)))


def make_inputs(torch, prob, device, seed):
    """x and w uniform in [-1, 1), rounded to the dtype; channels_last for nhwc."""
    p = prob["params"]
    dtype = getattr(torch, TORCH_DTYPES[prob["dtype"]])
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    g = int(p.get("g", 1))

    def new(shape):
        t = torch.rand(shape, generator=gen, device=device, dtype=torch.float32) * 2 - 1
        t = t.to(dtype)
        if p.get("layout") == "nhwc":
            t = t.contiguous(memory_format=torch.channels_last)
        return t

    return new([p["mb"], p["ic"], p["ih"], p["iw"]]), new([p["oc"], p["ic"] // g, p["kh"], p["kw"]])


def compare(torch, out, ref, tol):
    """core/compare.cpp compare() on tensors: {passed, max_abs_err, ...} in the schema's form."""
    got = out.double().contiguous().reshape(-1)
    exp = ref.contiguous().reshape(-1)
    n = got.numel()
    finite = torch.isfinite(got)
    non_finite = int((~finite).sum())
    diff = (got - exp).abs()
    bad = (~finite) | (diff > tol["atol"] + tol["rtol"] * exp.abs())
    mismatches = int(bad.sum())
    fdiff = torch.where(finite, diff, torch.zeros_like(diff))
    ref2 = float((exp * exp).sum())
    err2 = float((fdiff * fdiff).sum())
    rel = math.sqrt(err2 / ref2) if ref2 > 0 else math.sqrt(err2)
    max_abs = float(fdiff.max()) if n else 0.0
    if non_finite:
        rel = max_abs = math.inf
    out_constant = n > 1 and bool((got == got[0]).all() or torch.isnan(got).all())
    ref_constant = n > 1 and bool((exp == exp[0]).all())
    mistrusted = out_constant and not ref_constant
    first = []
    for i in bad.nonzero().reshape(-1)[:5].tolist():
        first.append({"index": i, "got": float(got[i]), "expected": float(exp[i])})
    if n == 0:
        msg = "no output elements"
    elif non_finite:
        msg = f"{non_finite} of {n} outputs are NaN or Inf"
    elif mistrusted:
        msg = f"output is constant ({float(got[0])}) while the reference is not: mistrusted"
    elif mismatches:
        msg = (f"{mismatches} of {n} outputs outside atol {tol['atol']:g} + rtol "
               f"{tol['rtol']:g}*|ref|")
    else:
        msg = "ok"
    return {"passed": n > 0 and mismatches == 0 and not mistrusted, "max_abs_err": max_abs,
            "rel_l2_err": rel, "tolerance": tol, "elements": n, "mismatches": mismatches,
            "non_finite": non_finite, "mistrusted": mistrusted, "first_mismatches": first,
            "message": msg, "shape_ok": True}


def set_math_flags(torch, dtype):
    """TF32 on for tf32, off otherwise, in cuDNN and cuBLAS (libtorch_cuda's flags)."""
    tf32 = dtype == "tf32"
    if hasattr(torch.backends, "cudnn"):
        torch.backends.cudnn.allow_tf32 = tf32
    if hasattr(torch.backends, "cuda"):
        torch.backends.cuda.matmul.allow_tf32 = tf32


def reference_of(torch, prob, x, w):
    """The float64 conv of the inputs (TF32 cannot apply) and its rms; on NCHW copies, the layout
    every float64 conv path of PyTorch takes."""
    stride, pad, dil, g = conv_args(prob["params"])
    x64 = x.double().contiguous()
    w64 = w.double().contiguous()
    ref = torch.nn.functional.conv2d(x64, w64, None, stride, pad, dil, g)
    return ref, math.sqrt(float((ref * ref).mean())) if ref.numel() else 0.0


def run_problem(torch, compile_fn, prob, mode, device, cfg, seed, rec, reference=None):
    """Fills rec (a record()) for one problem in one mode. compile_fn(fn, mode) is torch.compile
    in the product; reference, when given, is (x, w, ref, rms) made once per problem."""
    cuda = device == "cuda"
    p = prob["params"]
    stride, pad, dil, g = conv_args(p)
    set_math_flags(torch, prob["dtype"])
    if reference is None:
        x, w = make_inputs(torch, prob, device, seed)
        ref, ref_rms = reference_of(torch, prob, x, w)
    else:
        x, w, ref, ref_rms = reference

    def conv(a, b):
        return torch.nn.functional.conv2d(a, b, None, stride, pad, dil, g)

    def sync():
        if cuda:
            torch.cuda.synchronize()

    if hasattr(torch, "_dynamo"):
        torch._dynamo.reset()
    fn = compile_fn(conv, mode)
    sync()
    t0 = time.perf_counter()
    fn(x, w)
    sync()
    rec["compile_time_ms"] = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    fn(x, w)
    sync()
    rec["first_run_ms"] = (time.perf_counter() - t0) * 1e3
    s, stop = sample(lambda: fn(x, w), sync, EventTimer(torch) if cuda else None, cfg)
    rec["stop_reason"] = stop
    rec["cpu_time_ms"] = summarize(s["host"])
    rec["total_time_ms"] = summarize(s["total"])
    rec["thread_cpu_time_ms"] = summarize(s["thread_cpu"])
    if cuda:
        rec["gpu_time_ms"] = summarize(s["device"])
    # the check: one more call, its output copied at once (CUDA graphs reuse the output memory)
    out = fn(x, w).clone()
    sync()
    k = (p["ic"] // g) * p["kh"] * p["kw"]
    if tuple(out.shape) != tuple(ref.shape):
        rec.update(status="incorrect", reason=f"output shape {tuple(out.shape)}, reference "
                                              f"{tuple(ref.shape)}")
        rec["correctness"] = {"passed": False, "message": rec["reason"], "shape_ok": False}
        return rec
    rec["correctness"] = compare(torch, out, ref, dot_tolerance(prob["dtype"], k, ref_rms))
    if not rec["correctness"]["passed"]:
        rec.update(status="incorrect", reason=rec["correctness"]["message"])
    primary = (rec["gpu_time_ms"] or rec["total_time_ms"])["median"]
    if primary > 0:
        rec["gflop_per_s"] = prob["flop"] / (primary * 1e6)
        rec["gbyte_per_s"] = prob["bytes"] / (primary * 1e6)
    return rec


# ---- the command line --------------------------------------------------------------------------

def source_record(myconv, output):
    """system.source: the myconv built from the same tree (its commit and difference)."""
    if not myconv:
        return {"commit": None, "origin": "unknown", "why": "no --myconv given"}
    try:
        rec = json.loads(subprocess.run([myconv, "--source-info"], check=True,
                                        capture_output=True, text=True, timeout=120).stdout)
        if rec.get("dirty"):
            diff = output.rsplit(".json", 1)[0] + ".source.diff"
            subprocess.run([myconv, "--write-source-diff", diff], check=True, timeout=120)
            rec["diff_file"] = os.path.basename(diff)
        return rec
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        return {"commit": None, "origin": "unknown", "why": f"{myconv} --source-info: {e}"}


def write_doc(doc, path):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", required=True, help="a run's cases.jsonl or a results.json")
    ap.add_argument("--output", required=True, help="JSON file (the conv suite's schema)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--modes", default="default,max-autotune")
    ap.add_argument("--warmup", type=int, default=MEASURE_DEFAULTS["warmup"])
    ap.add_argument("--min-iters", type=int, default=MEASURE_DEFAULTS["min_iters"])
    ap.add_argument("--max-iters", type=int, default=MEASURE_DEFAULTS["max_iters"])
    ap.add_argument("--min-time-ms", type=float, default=MEASURE_DEFAULTS["min_time_ms"])
    ap.add_argument("--max-time-ms", type=float, default=MEASURE_DEFAULTS["max_time_ms"])
    ap.add_argument("--target-cv", type=float, default=MEASURE_DEFAULTS["target_cv"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--myconv", help="the myconv of the run (its source record)")
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in BACKENDS]
    if bad or not modes:
        raise UsageError(f"--modes: expected a list of {', '.join(BACKENDS)}, got '{args.modes}'")
    if args.warmup < 0 or args.min_iters < 1 or args.max_iters < 1 or args.target_cv < 0:
        raise UsageError("--warmup >= 0, --min-iters >= 1, --max-iters >= 1, --target-cv >= 0")
    if args.min_time_ms < 0 or args.min_time_ms > args.max_time_ms:
        raise UsageError("--min-time-ms must be >= 0 and not exceed --max-time-ms")
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder):
        raise UsageError(f"--output: folder '{folder}' does not exist")
    args.modes = modes
    args.measure = {"warmup": args.warmup, "min_iters": args.min_iters,
                    "max_iters": args.max_iters, "min_time_ms": args.min_time_ms,
                    "max_time_ms": args.max_time_ms, "target_cv": args.target_cv}
    return args


def main(argv=None):
    try:
        args = parse_args(argv)
        problems = load_problems(args.cases, args.device)
    except UsageError as e:
        print(f"inductor_reference.py: error: {e}", file=sys.stderr)
        return 2
    command = " ".join(["inductor_reference.py"] + list(sys.argv[1:] if argv is None else argv))
    system = {"host": socket.gethostname(),
              "utc_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "os": platform.platform(), "python": sys.version.split()[0],
              "source": source_record(args.myconv, args.output), "libraries": {}, "gpus": []}
    if not problems:
        print(f"inductor_reference.py: no conv problem on {args.device} in {args.cases}")
        write_doc({"schema_version": 2, "system": system, "results": []}, args.output)
        return 0
    torch, why = torch_missing(args.device)
    if why:
        print(f"inductor_reference.py: skipped: {why}")
        write_doc(skipped_document(problems, args.modes, args.device, why, command, system),
                  args.output)
        return 0
    # A fresh on-disk cache: compile times are a first compile's, whatever ran before.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR",
                          tempfile.mkdtemp(prefix="myconv_inductor_cache_"))
    version = f"torch {torch.__version__} (Inductor)"
    system["libraries"] = {b: version for b in (BACKENDS[m] for m in args.modes)}
    if args.device == "cuda":
        system["gpus"] = [{"index": torch.cuda.current_device(),
                           "name": torch.cuda.get_device_name(torch.cuda.current_device())}]
    doc = {"schema_version": 2, "system": system, "results": []}
    for i, prob in enumerate(problems):
        reference = None
        for mode in args.modes:
            rec = record(prob, mode, args.device, torch.__version__, command)
            try:
                if reference is None:
                    set_math_flags(torch, prob["dtype"])
                    x, w = make_inputs(torch, prob, args.device, args.seed)
                    reference = (x, w) + reference_of(torch, prob, x, w)
                run_problem(torch, lambda f, m: torch.compile(f, mode=m, dynamic=False), prob,
                            mode, args.device, args.measure, args.seed, rec, reference)
            except Exception as e:  # one problem's failure is a record, never the end
                rec.update(status="failed", reason=f"{type(e).__name__}: {e}".splitlines()[0][:300])
                if args.device == "cuda" and "out of memory" in str(e).lower():
                    reference = None
                    torch.cuda.empty_cache()
            doc["results"].append(rec)
            write_doc(doc, args.output)
            fig = rec.get("gpu_time_ms") or rec.get("total_time_ms") or {}
            shown = (f"{fig['median']:.4g} ms, compile {rec['compile_time_ms']:.4g} ms"
                     if rec["status"] == "passed" else f"{rec['status']}: {rec['reason']}")
            print(f"[{i + 1}/{len(problems)}] {prob['problem']} {rec['backend']}: {shown}",
                  flush=True)
        reference = None
    print(f"results: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
