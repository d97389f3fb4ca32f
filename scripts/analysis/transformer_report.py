"""The transformer suite's report (mytransformer and scripts/references/hf_reference.py results,
suite "transformer"): report.md with the system and the model, a table per model, device and dtype
of every generation (TTFT, decode per token, throughputs, memory: the measured peak beside the
prediction from the config), the decode step's bytes and bandwidth (against the measured copy
bandwidth), the implementations against each other on the same case
(libtorch_graph and hf_transformers against libtorch_eager), the training steps, the issue's
memory target, the cases that did not pass with their reasons, and the operations inside a
prefill and a decode step from the run's Chrome traces (scripts/analysis/transformer_ops.py);
plots/ as scripts/analysis/transformer_plots.py draws them. Figures are read from
the records' `metrics` (results/README.md names them), recomputed only where a ratio is shown;
the memory prediction is never recomputed (records without it say "not recorded").
"""

import os


from analysis.common import (command_line, fmt, md_table, number, output_folders, passed, plot_note,
                             plots_markdown, remove_stale_plots, save_figure, shorten,
                             system_section, write_atomic, write_report, NOT_RUN,
                             not_run_lines)
from analysis.slots import time_split_section

from analysis.transformer_ops import section as operations_section
from analysis.transformer_plots import PLOT_NAMES, make_plots

# Plots of earlier versions of this report, removed with the stale ones.
OLD_PLOT_NAMES = ["ttft_vs_input_length.png", "decode_ms_per_token_vs_batch.png",
                  "decode_tokens_per_s_vs_batch.png", "peak_memory_vs_batch_input.png"]
SUMMARY = ("report.md holds the system and the model, a table per model, device and dtype of "
           "every generation (TTFT, decode per token, throughputs, memory measured and "
           "predicted), the implementations compared on the same cases, the training steps, the "
           "memory target and the cases that did not pass; plots/ holds " +
           ", ".join(PLOT_NAMES) + ".")
# The eager LibTorch path every other implementation is compared with: libtorch_cpu and
# libtorch_cuda, named libtorch_eager (on either device) in results written before the suites
# shared one backend naming scheme.
REFERENCE_IMPLS = ("libtorch_cpu", "libtorch_cuda", "libtorch_eager")
# Issue 13: the peak (the CUDA caching allocator's allocated bytes) within 10% of the prediction
# from the config (models/transformer/memory.cpp: weights + KV cache + activations).
MEMORY_TOLERANCE = 0.10
# Issue 13: libtorch_graph's decode per token at batch 1 (ms), per model.
DECODE_TARGET_MS = {"gpt2": 0.5, "qwen2-0.5b": 1.0}
# Issue 28: own_cuda's weight bytes per decode step / step time against the measured copy
# bandwidth at batch 1 in fp16 and bf16, per model; and its decode tokens/s at least
# libtorch_graph's at these batch sizes.
BANDWIDTH_TARGET = {"llama-3.2-1b": 0.70, "qwen2-0.5b": 0.60, "gpt2": 0.40}
THROUGHPUT_BATCHES = (8, 16)
NOT_RECORDED = "not recorded"


class Row:
    """One record with what the report reads of it."""

    def __init__(self, r):
        self.r = r
        p = r.get("params") if isinstance(r.get("params"), dict) else {}
        self.task = p.get("task", "generate")
        self.batch = p.get("batch_size")
        self.input = p.get("input_length")
        self.output = p.get("output_length")
        self.model = p.get("model") or r.get("name") or "?"
        self.impl = r.get("backend")
        self.method = (r.get("extra") or {}).get("method") if isinstance(r.get("extra"), dict) \
            else None
        if self.impl == "hf_transformers" and self.method:
            self.impl = f"hf_transformers ({self.method})"
        self.device = r.get("device", "?")
        self.dtype = r.get("dtype", "?")
        self.metrics = r.get("metrics") if isinstance(r.get("metrics"), dict) else {}

    def m(self, key):
        return number(self.metrics.get(key))

    def group(self):
        return (self.model, self.device, self.dtype)

    def case(self):
        return self.r.get("problem")


def mib(x):
    return "n/a" if x is None else f"{x / 2**20:.1f}"


def predicted_mib(r):
    """The predicted peak in MiB; "not recorded" for records made before mytransformer
    predicted it (the prediction is never recomputed here)."""
    p = r.m("predicted_peak_bytes")
    return NOT_RECORDED if p is None else mib(p)


def peak_ratio(r):
    """peak_allocated_bytes / predicted as mytransformer recorded it (CUDA only), as text."""
    return fmt(r.m("peak_vs_prediction"), 3)


def generation_tables(rows):
    out = []
    groups = sorted({r.group() for r in rows if r.task == "generate"})
    for g in groups:
        model, device, dtype = g
        out += [f"### {model}, {device}, {dtype}", ""]
        table = []
        for r in sorted((r for r in rows if r.group() == g and r.task == "generate"),
                        key=lambda r: (r.impl or "", r.batch or 0, r.input or 0)):
            if not passed(r.r):
                table.append([r.impl, r.case(), r.r.get("status")] + [""] * 10 +
                             [shorten(r.r.get("reason", ""), 80)])
                continue
            mem = r.m("peak_allocated_bytes")
            table.append([r.impl, r.case(), "passed", fmt(r.m("ttft_ms")),
                          fmt(r.m("decode_ms_per_token_median")),
                          fmt(r.m("decode_ms_per_token_p90")),
                          fmt(r.m("total_latency_ms")), fmt(r.m("prefill_tokens_per_s")),
                          fmt(r.m("decode_tokens_per_s")), fmt(r.m("e2e_tokens_per_s")),
                          mib(mem if mem is not None else r.m("host_peak_rss_bytes")),
                          predicted_mib(r), peak_ratio(r), ""])
        out += md_table(["impl", "case", "status", "TTFT ms", "ms/token median", "ms/token p90",
                         "total ms", "prefill tok/s", "decode tok/s", "e2e tok/s",
                         "peak MiB (GPU allocated, else host RSS)", "predicted MiB",
                         "peak/predicted", "reason"], table)
        out.append("")
    return out or ["No generation in these files.", ""]


def gb(x):
    return "n/a" if x is None else f"{x / 1e6:.1f}"


def bandwidth(rows):
    """Bytes a decode step moves at the least (weights read once, the attended K/V read, the new
    K/V written: mytransformer's metrics) over the mean step time, and against the device's
    measured copy bandwidth where the run measured one."""
    table = []
    for r in sorted((r for r in rows if passed(r.r) and r.task == "generate" and
                     r.m("decode_bytes_per_step") is not None),
                    key=lambda r: (r.group(), r.impl or "", r.batch or 0, r.input or 0)):
        kv = (r.m("decode_kv_read_bytes_per_step") or 0) + (r.m("decode_kv_write_bytes_per_step")
                                                            or 0)
        table.append([r.impl, "/".join(r.group()), r.case(), fmt(r.m("decode_ms_per_token_mean")),
                      gb(r.m("decode_weight_bytes_per_step")), gb(kv),
                      fmt(r.m("decode_bandwidth_gbs")), fmt(r.m("decode_weight_bandwidth_gbs")),
                      fmt(r.m("copy_bandwidth_gbs")), fmt(r.m("decode_bandwidth_vs_copy"), 3),
                      fmt(r.m("decode_weight_bandwidth_vs_copy"), 3)])
    out = ["## Decode bandwidth", "",
           "Per decode step: every weight read once, the K/V of the attended positions read, the "
           "new K/V written (MB = 1e6 bytes), over the mean step time; against the device's "
           "measured copy bandwidth (`system.bandwidth.cuda`, read + write) where the run measured "
           "it, else n/a. hf_transformers records carry no byte counts.", ""]
    if not table:
        return out + ["No passed generation in these files records its bytes per step.", ""]
    return out + md_table(["impl", "model/device/dtype", "case", "ms/step", "weight MB",
                           "KV MB", "GB/s", "weight GB/s", "copy GB/s", "vs copy",
                           "weights vs copy"], table) + [""]


def bandwidth_targets(rows):
    """Issue 28: own_cuda at batch 1 (fp16, bf16): weight bandwidth against the copy bandwidth,
    the worst case per model; own_cuda's decode tokens/s against libtorch_graph's on the same case
    at batch 8 and 16."""
    out = []
    for model, bar in BANDWIDTH_TARGET.items():
        mine = [r for r in rows if passed(r.r) and r.impl == "own_cuda" and r.model == model and
                r.batch == 1 and r.dtype in ("fp16", "bf16") and
                r.m("decode_weight_bandwidth_vs_copy") is not None]
        title = (f"own_cuda weight bytes per step / step time at batch 1, {model}: >= "
                 f"{100 * bar:g}% of the copy bandwidth")
        if not mine:
            out.append(f"- {title}: {NOT_RECORDED} (no such case in these files)")
            continue
        worst = min(mine, key=lambda r: r.m("decode_weight_bandwidth_vs_copy"))
        w = worst.m("decode_weight_bandwidth_vs_copy")
        verdict = "met" if w >= bar else "**missed**"
        out.append(f"- {title}: {verdict}; worst {100 * w:.1f}% ({worst.dtype} {worst.case()}, "
                   f"{fmt(worst.m('decode_weight_bandwidth_gbs'))} GB/s), {len(mine)} case(s)")
    graph = {(r.group(), r.case()): r for r in rows if passed(r.r) and
             r.impl == "libtorch_graph" and r.m("decode_tokens_per_s") is not None}
    pairs = []
    for r in rows:
        if r.impl == "own_cuda" and passed(r.r) and r.batch in THROUGHPUT_BATCHES and \
                r.m("decode_tokens_per_s") is not None:
            g = graph.get((r.group(), r.case()))
            if g is not None and g.m("decode_tokens_per_s"):
                pairs.append((r.m("decode_tokens_per_s") / g.m("decode_tokens_per_s"), r))
    title = ("own_cuda decode tokens/s >= libtorch_graph's at batch " +
             " and ".join(str(b) for b in THROUGHPUT_BATCHES))
    if not pairs:
        return out + [f"- {title}: {NOT_RECORDED} (no such pair of cases in these files)"]
    ratio, worst = min(pairs, key=lambda x: x[0])
    verdict = "met" if ratio >= 1 else f"**missed** at {sum(x[0] < 1 for x in pairs)} of " \
        f"{len(pairs)} cases"
    return out + [f"- {title}: {verdict}; worst {'/'.join(worst.group())} {worst.case()}: "
                  f"{ratio:.2f}x, {len(pairs)} case(s)"]


def comparison(rows):
    """Each implementation's decode time per token and TTFT against libtorch_eager's on the same
    model, device, dtype and case (ratio > 1: faster than eager)."""
    ref = {(r.group(), r.case()): r for r in rows
           if r.impl in REFERENCE_IMPLS and passed(r.r) and r.task == "generate"}
    table = []
    for r in rows:
        if r.impl in REFERENCE_IMPLS or not passed(r.r) or r.task != "generate":
            continue
        base = ref.get((r.group(), r.case()))
        if base is None:
            continue
        def ratio(key):
            a, b = base.m(key), r.m(key)
            return None if a is None or not b else a / b
        table.append([r.impl, "/".join(r.group()), r.case(),
                      fmt(ratio("decode_ms_per_token_median"), 3), fmt(ratio("ttft_ms"), 3),
                      fmt(ratio("total_latency_ms"), 3)])
    out = ["## Implementations against libtorch_eager", "",
           "Speed-up = libtorch_eager's time / the implementation's, same model, device, dtype and "
           "case (> 1: faster).", ""]
    if not table:
        return out + ["No case ran in libtorch_eager and another implementation.", ""]
    return out + md_table(["impl", "model/device/dtype", "case", "decode per token",
                           "TTFT", "total latency"], table) + [""]


def training(rows):
    table = [[r.impl, "/".join(r.group()), r.case(), r.r.get("status"), fmt(r.m("forward_ms")),
              fmt(r.m("loss_ms")), fmt(r.m("backward_ms")), fmt(r.m("train_step_ms")),
              fmt(r.m("train_tokens_per_s")), mib(r.m("peak_allocated_bytes")),
              predicted_mib(r) if passed(r.r) else "", peak_ratio(r) if passed(r.r) else ""]
             for r in rows if r.task == "train"]
    if not table:
        return []
    return ["## Training steps", ""] + md_table(
        ["impl", "model/device/dtype", "case", "status", "forward ms", "loss ms", "backward ms",
         "step ms", "tokens/s", "peak GPU MiB", "predicted MiB", "peak/predicted"], table) + [""]


def targets(rows):
    """Issue 13's memory target over the passed cases that carry a measured peak and the
    prediction (CUDA records of mytransformer): met when every ratio is within 10%."""
    judged = [r for r in rows if passed(r.r) and r.m("peak_vs_prediction") is not None]
    title = f"Peak memory within {100 * MEMORY_TOLERANCE:g}% of the prediction from the config"
    out = ["## Targets", "",
           "The issue's targets. Memory: the CUDA caching allocator's peak of allocated bytes "
           "(`peak_allocated_bytes`) against the prediction from the config "
           "(`predicted_peak_bytes`: weights + KV cache + activations + cuBLAS workspaces, "
           "models/transformer/memory.cpp), over every passed case that records both. Decode: "
           "libtorch_graph's median ms per token at batch 1. Prefill: libtorch_eager's TTFT "
           "against hf_transformers' manual KV-cache loop on the same case.", ""]
    if not judged:
        return out + [f"- {title}: {NOT_RECORDED} (no passed CUDA case in these files carries "
                      "`metrics.peak_vs_prediction`)"] + decode_targets(rows) + \
            prefill_target(rows) + bandwidth_targets(rows) + [""]
    worst = max(judged, key=lambda r: abs(r.m("peak_vs_prediction") - 1))
    outside = [r for r in judged if abs(r.m("peak_vs_prediction") - 1) > MEMORY_TOLERANCE]
    where = (f"{worst.impl} {'/'.join(worst.group())} {worst.case()}: peak "
             f"{mib(worst.m('peak_allocated_bytes'))} MiB, predicted "
             f"{mib(worst.m('predicted_peak_bytes'))} MiB, peak/predicted "
             f"{peak_ratio(worst)}")
    result = "met" if not outside else f"**missed** ({len(outside)} of {len(judged)} outside)"
    out += [f"- {title}: {result}; {len(judged)} case(s), worst {where}"]
    return out + decode_targets(rows) + prefill_target(rows) + bandwidth_targets(rows) + [""]


def decode_targets(rows):
    """libtorch_graph's median decode ms per token at batch 1 against DECODE_TARGET_MS, per model:
    the worst case and how many of the cases meet it."""
    out = []
    for model, bar in DECODE_TARGET_MS.items():
        mine = [r for r in rows if passed(r.r) and r.task == "generate" and r.batch == 1 and
                r.impl == "libtorch_graph" and r.model == model and r.device == "cuda" and
                r.m("decode_ms_per_token_median") is not None]
        title = f"libtorch_graph decode at batch 1, {model}: <= {bar:g} ms per token"
        if not mine:
            out.append(f"- {title}: {NOT_RECORDED} (no such case in these files)")
            continue
        worst = max(mine, key=lambda r: r.m("decode_ms_per_token_median"))
        best = min(mine, key=lambda r: r.m("decode_ms_per_token_median"))
        over = [r for r in mine if r.m("decode_ms_per_token_median") > bar]
        w = worst.m("decode_ms_per_token_median")
        verdict = "met" if not over else (
            f"**missed** at {len(over)} of {len(mine)} cases, the worst by "
            f"{100 * (w / bar - 1):.0f}%")
        out.append(f"- {title}: {verdict}; {len(mine)} case(s) ({worst.dtype}), "
                   f"{best.m('decode_ms_per_token_median'):.3f} ({best.case()}) to {w:.3f} ms "
                   f"({worst.case()})")
    return out


def prefill_target(rows):
    """Our libtorch_eager TTFT against HF's manual KV-cache loop on the same case (prefill no
    slower than HF's): the worst ratio."""
    ours = {(r.group(), r.case()): r for r in rows if passed(r.r) and r.task == "generate" and
            r.impl in REFERENCE_IMPLS and r.m("ttft_ms") is not None}
    pairs = []
    for h in rows:
        if h.impl == "hf_transformers (manual)" and passed(h.r) and h.m("ttft_ms") is not None:
            o = ours.get((h.group(), h.case()))
            if o is not None and h.m("ttft_ms") > 0:
                pairs.append((o.m("ttft_ms") / h.m("ttft_ms"), o, h))
    title = "Prefill (TTFT) of libtorch_eager no slower than HF's manual loop"
    if not pairs:
        return [f"- {title}: {NOT_RECORDED} (no hf_transformers manual record beside ours)"]
    ratio, o, h = max(pairs, key=lambda x: x[0])
    over = [x for x in pairs if x[0] > 1]
    verdict = "met" if not over else f"**missed** at {len(over)} of {len(pairs)} cases"
    return [f"- {title}: {verdict}; {len(pairs)} case(s), worst {'/'.join(o.group())} "
            f"{o.case()}: {o.m('ttft_ms'):.2f} ms against {h.m('ttft_ms'):.2f} ms "
            f"({ratio:.2f}x)"]


def not_passed(rows):
    bad = [[r.impl, "/".join(r.group()), r.case(), r.r.get("status"),
            shorten(r.r.get("reason", ""), 160)] for r in rows
           if not passed(r.r) and r.r.get("status") not in NOT_RUN]
    not_run = [(r.impl, r.r.get("status"), r.r.get("reason")) for r in rows
               if r.r.get("status") in NOT_RUN]
    out = ["## Cases that did not pass", ""]
    if not_run:
        out += ["Not run: skipped or unsupported (one line per implementation and reason):", ""]
        out += not_run_lines(not_run) + [""]
    if not bad:
        return out + ["Every case that ran passed." if not_run else "Every case passed.", ""]
    return out + md_table(["impl", "model/device/dtype", "case", "status", "reason"], bad) + [""]


def model_section(inputs):
    out = ["## Model", ""]
    rows = []
    for doc in inputs:
        # system.models: every model of the file (a run folder's, or a --model list's); older
        # files and hf_reference.py's name one, system.model.
        models = doc["system"].get("models") or [doc["system"].get("model")]
        for m in models:
            if not isinstance(m, dict):
                continue
            rows.append([doc["path"], m.get("name"), m.get("arch", ""), m.get("parameters"),
                         shorten(str(m.get("source", "")), 100),
                         shorten(str(m.get("attention", "")), 60)])
    if not rows:
        return out + ["No model recorded (`system.model`).", ""]
    return out + md_table(["file", "model", "arch", "parameters", "weights", "attention"],
                          rows) + [""]


def reference_section(inputs):
    """What a run folder's Hugging Face reference did, or why it did not run
    (results.json's run.hf_reference, written by scripts/runner/reference.py)."""
    out = []
    for doc in inputs:
        hf = (doc.get("run") or {}).get("hf_reference")
        if not isinstance(hf, dict):
            continue
        out += ["## Hugging Face reference", ""]
        if hf.get("skipped"):
            out += [f"Not run: {hf.get('why')}.", ""]
        runs = hf.get("runs") or []
        if runs:
            out += [f"`scripts/references/hf_reference.py` with `{hf.get('python')}`, one process "
                    "per model and dtype; its records (backend `hf_transformers`, one per method) "
                    "are in the tables above, from the files below.", ""]
            out += md_table(["model", "dtype", "device", "status", "file", "seconds", "reason"],
                            [[r.get("model"), r.get("dtype"), r.get("device"), r.get("status"),
                              f"hf_reference/{r['file']}" if r.get("file") else "none",
                              fmt(number(r.get("seconds"))), shorten(r.get("reason") or "", 100)]
                             for r in runs]) + [""]
    return out


def report_main(inputs, paths, output_dir):
    """Writes report.md and plots/ for the loaded inputs (all validated before this is called)."""
    out_dir, plot_dir = output_folders(paths, output_dir)
    rows = [Row(r) for doc in inputs for r in doc["results"]]
    note = plot_note(any(passed(r.r) for r in rows))
    plots = make_plots(rows, plot_dir) if note is None else []
    remove_stale_plots(plot_dir, PLOT_NAMES + OLD_PLOT_NAMES, [name for name, _ in plots])
    n_pass = sum(passed(r.r) for r in rows)
    lines = ["# mytransformer report", "", f"Made by `{command_line()}` from:", ""]
    lines += [f"- `{p}`" for p in paths] + [""]
    lines += [f"{len(rows)} case(s) from {len(inputs)} file(s), {n_pass} passed. Times are means "
             "over each case's timed runs (`metrics`, results/README.md).", ""]
    lines += model_section(inputs)
    lines += ["## Generations", ""] + generation_tables(rows)
    lines += (bandwidth(rows) + comparison(rows) + training(rows) + targets(rows) +
              not_passed(rows) +
              reference_section(inputs))
    lines += operations_section(inputs, out_dir)
    lines += time_split_section(inputs)
    lines += plots_markdown(note, plots)
    lines += ["## System", ""]
    for doc in inputs:
        lines += system_section(doc)
    write_report(out_dir, "\n".join(lines) + "\n", plot_dir, len(plots))



