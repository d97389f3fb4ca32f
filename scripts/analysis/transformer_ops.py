"""The operations inside a prefill and a decode step, from the Chrome traces mytransformer writes
with --trace-dir (core/trace_report.hpp: host ranges, CUDA API calls and, on CUDA builds, the
kernels, copies and sets CUPTI recorded; models/transformer/generate.cpp marks each traced
call's "prefill" and every "decode step"). Each piece of device work belongs to the phase whose
host range holds the start of its launch call (the flow's correlation id), else its own start;
only the counted calls ("call N") are read, not the uncounted set-up call. Kernels are sorted into
kinds of operation by their names (KINDS, first match wins), and the kinds ranked by their share
of the device time of one generation: the optimisation priorities, largest share first.

The traces are looked for in traces/ beside each input results file (a run folder made with
`--trace-dir <run folder>/traces`).
"""

import bisect
import glob
import json
import os
import re

from analysis.common import md_table, shorten

# (kind, pattern on the lower-cased kernel name); the first that matches names the kind.
KINDS = [
    ("attention", r"sdpa|flash|fmha|attention|attn|softmax"),
    ("matmul (GEMM/GEMV)", r"gemm|gemv|nvjet|cutlass|xmma|cublas|matmul|splitk|sm90_|sm80_|"
                           r"ampere_|hopper"),
    ("normalization", r"layer_norm|rms_?norm|layernorm|norm_kernel"),
    ("rotary embedding and KV cache write", r"rope|rotary|kv_|write_kv|cache"),
    ("sampling (argmax, top-k)", r"argmax|topk|top_k|sampl|multinomial"),
    ("activation", r"gelu|silu|swiglu|relu|tanh|sigmoid"),
    ("reduction", r"reduce|sum_kernel|max_kernel"),
    ("elementwise and copies", r"elementwise|add|mul|copy|fill|cat|index|embedding|cast"),
]
PHASES = ("prefill", "decode step")
OPERATIONS_FILE = "operations.json"  # the traces' summaries, beside report.md


def kind_of(event):
    if event.get("cat") in ("memcpy", "memset"):
        return "memcpy and memset"
    name = str((event.get("args") or {}).get("name") or event.get("name", "")).lower()
    for kind, pattern in KINDS:
        if re.search(pattern, name):
            return kind
    return "other kernels"


def trace_files(inputs):
    files = []
    for d in inputs:
        folder = os.path.join(os.path.dirname(os.path.abspath(d["path"])), "traces")
        files += sorted(glob.glob(os.path.join(folder, "*.json")))
    return sorted(set(files))


def read_trace(path):
    """The trace's case and, per phase, {kind: device microseconds} summed over the counted calls,
    the number of phase ranges seen, and the phases' host time; None when it is not a
    transformer trace."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        events = doc["traceEvents"]
        other = doc.get("otherData") or {}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if other.get("suite") != "transformer":
        return None
    host = [e for e in events if e.get("ph") == "X" and e.get("cat") == "host_range"]
    calls = [(e["ts"], e["ts"] + e["dur"]) for e in host if re.fullmatch(r"call \d+",
                                                                          str(e.get("name")))]
    def in_calls(t):
        return any(a <= t <= b for a, b in calls)
    phases = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in host
                    if e.get("name") in PHASES and in_calls(e["ts"]))
    launch = {(e.get("args") or {}).get("correlation"): e["ts"] for e in events
              if e.get("ph") == "X" and e.get("cat") == "cuda_api"}
    out = {"path": path, "case": other, "calls": len(calls),
           "count": {p: sum(1 for x in phases if x[2] == p) for p in PHASES},
           "host_us": {p: sum(b - a for a, b, n in phases if n == p) for p in PHASES},
           "device_us": {p: {} for p in PHASES}, "busy_us": {p: 0.0 for p in PHASES},
           "device_events": 0,
           "activity": other.get("device_activity", "")}
    starts = [a for a, _, _ in phases]
    spans = {p: [] for p in PHASES}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "memcpy", "memset"):
            continue
        t = launch.get((e.get("args") or {}).get("correlation"), e["ts"])
        i = bisect.bisect_right(starts, t) - 1
        if i < 0 or not phases[i][0] <= t <= phases[i][1]:
            continue
        out["device_events"] += 1
        kinds = out["device_us"][phases[i][2]]
        kinds[kind_of(e)] = kinds.get(kind_of(e), 0.0) + float(e.get("dur", 0))
        spans[phases[i][2]].append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))))
    for p, iv in spans.items():  # the time the device was busy: the union of the intervals
        end = None
        for a, b in sorted(iv):
            if end is None or a > end:
                out["busy_us"][p] += b - a
                end = b
            elif b > end:
                out["busy_us"][p] += b - end
                end = b
    return out


def summaries(inputs, out_dir):
    """Each trace's summary (read_trace): from the Chrome traces in traces/ beside the inputs,
    written to out_dir/operations.json so that the report can be made again where the traces
    (tens to hundreds of MB each) are not kept; else from an operations.json beside an input or
    in out_dir. Returns (summaries, where they came from)."""
    files = trace_files(inputs)
    traces = [t for t in (read_trace(p) for p in files) if t]
    if traces:
        kept = [dict(t, path=os.path.basename(t["path"])) for t in traces]
        if out_dir:
            with open(os.path.join(out_dir, OPERATIONS_FILE), "w", encoding="utf-8") as f:
                json.dump({"from": "traces/", "traces": kept}, f, indent=1)
                f.write("\n")
        return kept, "traces"
    folders = [os.path.dirname(os.path.abspath(d["path"])) for d in inputs]
    for folder in folders + ([out_dir] if out_dir else []):
        path = os.path.join(folder, OPERATIONS_FILE)
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            return [t for t in doc["traces"] if isinstance(t, dict)], "summary"
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return [], None


def section(inputs, out_dir=None):
    """The report's section: per traced case, the device time per kind of operation in one
    prefill and in one decode step (means over the counted calls), and the priorities."""
    out = ["## Operations inside a prefill and a decode step", ""]
    traces, origin = summaries(inputs, out_dir)
    if not traces:
        return out + ["No transformer Chrome trace in `traces/` beside the inputs. Run "
                      "mytransformer with `--trace-dir <run folder>/traces` (a CUDA build records "
                      "the kernels with CUPTI) to get the device time per kind of operation "
                      "inside a prefill and a decode step, and the optimisation priorities it "
                      "implies.", ""]
    out += ["From the Chrome traces in `traces/` (mytransformer `--trace-dir`): device time per "
            "kind of operation, kernels sorted by name (scripts/analysis/transformer_ops.py), "
            "each attributed to the `prefill` or `decode step` range that launched it; means "
            "per prefill and per decode step over the counted calls. Share of a generation = "
            "the kind's time in one prefill plus all its decode steps over the device time of "
            "the whole generation. A kernel's whole duration is counted: where kernels overlap "
            "(programmatic dependent launch starts the next while the last one finishes), the "
            "kinds add up to more than the time the device was busy, given on the last row "
            "(the union of the kernels' intervals).", ""]
    if origin == "summary":
        out += [f"The traces are not kept in this folder; their summaries are "
                f"(`{OPERATIONS_FILE}`, written when the report was first made from them).", ""]
    host_only = []
    for t in traces:
        c = t["case"]
        title = f"### {c.get('name')} {c.get('backend')} {c.get('device')} {c.get('dtype')} " \
                f"`{c.get('problem')}`"
        head = [title, "", f"`{os.path.basename(t['path'])}`: {t['calls']} counted call(s), "
                f"{t['count']['prefill']} prefill and {t['count']['decode step']} decode-step "
                f"ranges; device activity: {shorten(t['activity'], 100)}.", ""]
        if not any(t["count"].values()):
            out += head + ["No `prefill` or `decode step` range in this trace (made by a "
                           "mytransformer that did not mark them): nothing to split.", ""]
            continue
        n_pre = max(t["count"]["prefill"], 1)
        n_dec = max(t["count"]["decode step"], 1)
        if not t["device_events"]:
            host_only.append([f"{c.get('name')} {c.get('backend')} {c.get('device')} "
                              f"{c.get('dtype')}", f"`{c.get('problem')}`",
                              f"{t['host_us']['prefill'] / n_pre / 1e3:.3f}",
                              f"{t['host_us']['decode step'] / n_dec / 1e3:.3f}",
                              f"{t['calls']}", shorten(t["activity"], 60)])
            continue
        out += head
        pre, dec = t["device_us"]["prefill"], t["device_us"]["decode step"]
        steps_per_call = t["count"]["decode step"] / max(t["calls"], 1)
        whole = {k: pre.get(k, 0) / n_pre + dec.get(k, 0) / n_dec * steps_per_call
                 for k in set(pre) | set(dec)}
        total = sum(whole.values()) or 1.0
        pre_total = sum(pre.values()) / n_pre or 1.0
        dec_total = sum(dec.values()) / n_dec or 1.0
        rows = []
        for k in sorted(whole, key=lambda k: -whole[k]):
            rows.append([k, f"{pre.get(k, 0) / n_pre:.1f}",
                         f"{100 * pre.get(k, 0) / n_pre / pre_total:.1f}%",
                         f"{dec.get(k, 0) / n_dec:.1f}",
                         f"{100 * dec.get(k, 0) / n_dec / dec_total:.1f}%",
                         f"{100 * whole[k] / total:.1f}%"])
        rows.append(["all device work", f"{pre_total:.1f}", "100%", f"{dec_total:.1f}", "100%",
                     "100%"])
        busy = t.get("busy_us") or {}
        if busy:
            rows.append(["device busy (union of intervals)",
                         f"{busy.get('prefill', 0) / n_pre:.1f}", "",
                         f"{busy.get('decode step', 0) / n_dec:.1f}", "", ""])
        out += md_table(["kind of operation", "prefill us", "prefill share",
                         "decode step us", "decode share", "share of a generation"], rows)
        top = sorted(whole, key=lambda k: -whole[k])[:3]
        out += ["", "Optimisation priorities (largest share of a generation first): " +
                "; ".join(f"{i + 1}. {k} ({100 * whole[k] / total:.0f}%)"
                          for i, k in enumerate(top)) + ".", ""]
    if host_only:
        out += ["### Traces without device work", "",
                "Host ranges only (a CPU case: the transformer suite records no operator "
                "profile on the host), so no split by kind of operation: the mean host time of "
                "one prefill and one decode step in the traced calls.", ""]
        out += md_table(["model impl device dtype", "case", "prefill ms", "decode step ms",
                         "traced calls", "device activity"], host_only) + [""]
    return out
