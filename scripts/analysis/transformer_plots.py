"""The transformer report's plots (scripts/analysis/transformer_report.py): the seed tool's set
(latency and throughput heatmaps over batch size x input length, batch-size and input-length
scaling, the prefill/decode time breakdown, the implementations side by side, memory) and the
distribution of the decode steps. A line joins only cases of one model, implementation, device,
dtype and the other axis' value; every panel names its case and every axis its unit.
"""

import math
import os

from analysis.common import passed, save_figure

PLOT_NAMES = ["latency_heatmap.png", "throughput_heatmap.png", "batch_size_scaling.png",
              "input_length_scaling.png", "time_breakdown.png", "performance_comparison.png",
              "memory_usage.png", "decode_step_distribution.png"]
MAX_PANELS = 12  # heatmap panels; more groups than this are left out and said in the title


def group_label(r):
    return f"{r.model} {r.impl} {r.device} {r.dtype}"


def generations(rows):
    return [r for r in rows if r.task == "generate" and passed(r.r) and r.batch and r.input]


def by_group(gen):
    groups = {}
    for r in gen:
        groups.setdefault(group_label(r), []).append(r)
    return dict(sorted(groups.items()))


def grid(n, width=4.2, height=3.4, max_cols=3):
    import matplotlib.pyplot as plt
    cols = min(n, max_cols)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def heatmap(gen, key, title, unit, name, plot_dir, fmt_cell):
    import matplotlib.pyplot as plt
    groups = {g: rs for g, rs in by_group(gen).items() if any(r.m(key) is not None for r in rs)}
    if not groups:
        return None
    shown = list(groups.items())[:MAX_PANELS]
    fig, axes = grid(len(shown))
    for ax, (label, rs) in zip(axes, shown):
        batches = sorted({r.batch for r in rs})
        lengths = sorted({r.input for r in rs})
        cell = {(r.batch, r.input): r.m(key) for r in rs if r.m(key) is not None}
        data = [[cell.get((b, n), float("nan")) for n in lengths] for b in batches]
        im = ax.imshow(data, cmap="viridis", aspect="auto", origin="lower")
        ax.set_xticks(range(len(lengths)))
        ax.set_xticklabels([str(n) for n in lengths])
        ax.set_yticks(range(len(batches)))
        ax.set_yticklabels([str(b) for b in batches])
        ax.set_xlabel("input length (tokens)")
        ax.set_ylabel("batch size")
        ax.set_title(label, fontsize=9)
        finite = [v for row in data for v in row if v == v]
        mid = (min(finite) + max(finite)) / 2 if finite else 0
        for i, row in enumerate(data):
            for j, v in enumerate(row):
                if v == v:
                    ax.text(j, i, fmt_cell(v), ha="center", va="center", fontsize=8,
                            color="white" if v < mid else "black")
        fig.colorbar(im, ax=ax, label=unit)
    more = f" ({len(groups) - len(shown)} more groups not shown)" if len(groups) > len(shown) \
        else ""
    fig.suptitle(title + more)
    fig.tight_layout()
    save_figure(fig, os.path.join(plot_dir, name))
    plt.close(fig)
    return (name, title + more)


def scaling(gen, plot_dir, x_of, x_name, other_of, other_name, name, title, panels):
    """Lines over x_of (log 2 axis), one per group and value of the other axis; panels: list of
    (metric key, y label)."""
    import matplotlib.pyplot as plt
    lines = {}
    for r in gen:
        lines.setdefault((group_label(r), other_of(r)), []).append(r)
    lines = {k: sorted(v, key=x_of) for k, v in lines.items() if len({x_of(r) for r in v}) >= 2}
    if not lines:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
    # One colour per group, one line style and marker per value of the other axis.
    groups = sorted({g for g, _ in lines})
    others = sorted({o for _, o in lines})
    cmap = plt.get_cmap("tab10" if len(groups) <= 10 else "tab20")
    styles = ["-", "--", ":", "-."]
    markers = ["o", "s", "^", "D", "v", "P"]
    for ax, (key, ylabel) in zip(axes[0], panels):
        for (label, other), rs in sorted(lines.items()):
            pts = [(x_of(r), r.m(key)) for r in rs if r.m(key) is not None]
            if len(pts) >= 2:
                g, o = groups.index(label), others.index(other)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=cmap(g % cmap.N),
                        linestyle=styles[o % len(styles)], marker=markers[o % len(markers)],
                        label=f"{label}, {other_name} {other}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        readable_log(ax.yaxis)
        xs = sorted({x_of(r) for rs in lines.values() for r in rs})
        ax.set_xticks(xs)
        ax.set_xticklabels([str(x) for x in xs])
        ax.minorticks_off()
        ax.set_xlabel(x_name)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8,
               bbox_to_anchor=(0.5, -0.02 - 0.035 * math.ceil(len(labels) / 2)))
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, os.path.join(plot_dir, name))
    plt.close(fig)
    return (name, title)


def readable_log(axis):
    """Ticks at 1, 2 and 5 of each decade, labelled as plain numbers (not 10^k)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def case_label(r):
    return f"{r.model} {r.impl} {r.dtype} mb{r.batch} in{r.input}"


def time_breakdown(gen, plot_dir):
    import matplotlib.pyplot as plt
    rs = [r for r in gen if r.m("ttft_ms") is not None and r.m("decode_total_ms") is not None]
    if not rs:
        return None
    rs.sort(key=lambda r: (r.model, r.impl, r.dtype, r.batch, r.input))
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.32 * len(rs)))
    y = range(len(rs))
    pre = [r.m("ttft_ms") for r in rs]
    dec = [r.m("decode_total_ms") for r in rs]
    ax.barh(y, pre, color="tab:orange", label="prefill (time to first token)")
    ax.barh(y, dec, left=pre, color="tab:blue", label="decode (the other tokens)")
    for i, (p, d) in enumerate(zip(pre, dec)):
        ax.text(p + d, i, f" {100 * p / (p + d):.0f}% prefill" if p + d > 0 else "",
                va="center", fontsize=7)
    ax.set_yticks(list(y))
    ax.set_yticklabels([case_label(r) + f" out{r.output}" for r in rs], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time per generation (ms, mean over runs)")
    title = "Where a generation's time goes: prefill and decode"
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_xlim(0, max(p + d for p, d in zip(pre, dec)) * 1.18)
    save_figure(fig, os.path.join(plot_dir, "time_breakdown.png"))
    plt.close(fig)
    return ("time_breakdown.png", title)


def comparison(gen, plot_dir):
    """Implementations side by side on the cases that more than one of them ran."""
    import matplotlib.pyplot as plt
    cases = {}
    for r in gen:
        cases.setdefault((r.model, r.device, r.dtype, r.batch, r.input, r.output), {})[r.impl] = r
    cases = {k: v for k, v in sorted(cases.items()) if len(v) >= 2}
    if not cases:
        return None
    impls = sorted({i for v in cases.values() for i in v})
    panels = [("ttft_ms", "TTFT (ms)"), ("decode_ms_per_token_median",
                                         "decode time per token, median (ms)")]
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8, 0.55 * len(cases) * len(impls)
                                                           / 2 + 3), 3.6 * len(panels)),
                             squeeze=False)
    width = 0.8 / len(impls)
    labels = [f"{m} {dt}\nmb{b} in{n}" for (m, dev, dt, b, n, o) in cases]
    for ax, (key, ylabel) in zip(axes[:, 0], panels):
        for k, impl in enumerate(impls):
            xs, ys = [], []
            for i, v in enumerate(cases.values()):
                if impl in v and v[impl].m(key) is not None:
                    xs.append(i + (k - (len(impls) - 1) / 2) * width)
                    ys.append(v[impl].m(key))
            ax.bar(xs, ys, width=width, label=impl)
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel(ylabel)
        ax.set_yscale("log")
        readable_log(ax.yaxis)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    title = "Implementations side by side on the same cases (lower is faster)"
    fig.suptitle(title)
    fig.tight_layout()
    save_figure(fig, os.path.join(plot_dir, "performance_comparison.png"))
    plt.close(fig)
    return ("performance_comparison.png", title)


def memory(gen, plot_dir):
    """Measured peak beside the prediction, one bar pair per case (no line: cases with the same
    batch x length are different cases)."""
    import matplotlib.pyplot as plt
    gpu = any(r.m("peak_allocated_bytes") for r in gen)
    key = "peak_allocated_bytes" if gpu else "host_peak_rss_bytes"
    rs = sorted((r for r in gen if r.m(key) is not None),
                key=lambda r: (r.model, r.impl, r.dtype, r.batch, r.input))
    if not rs:
        return None
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.32 * len(rs)))
    y = list(range(len(rs)))
    predicted = [r.m("predicted_peak_bytes") for r in rs]
    has_pred = gpu and any(p is not None for p in predicted)
    h = 0.4 if has_pred else 0.8
    ax.barh([i - (h / 2 if has_pred else 0) for i in y], [r.m(key) / 2**20 for r in rs],
            height=h, label="measured peak, GPU allocated" if gpu else "measured peak host RSS")
    if has_pred:
        ax.barh([i + h / 2 for i, p in zip(y, predicted) if p is not None],
                [p / 2**20 for p in predicted if p is not None], height=h,
                label="predicted from the config")
    ax.set_yticks(y)
    ax.set_yticklabels([case_label(r) for r in rs], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("MiB")
    title = ("Peak GPU memory per case, measured and predicted" if gpu else
             "Peak host memory per case (the process's peak RSS, libraries included)")
    ax.set_title(title)
    if has_pred:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(True, axis="x", alpha=0.3)
    save_figure(fig, os.path.join(plot_dir, "memory_usage.png"))
    plt.close(fig)
    return ("memory_usage.png", title)


def distribution(gen, plot_dir):
    """Every timed decode step of up to 12 cases, one box each, labels on the y axis."""
    import matplotlib.pyplot as plt
    dist = [(case_label(r), [s for run in (r.r.get("extra") or {}).get("decode_step_ms_runs", [])
                             for s in run]) for r in gen]
    dist = [(k, v) for k, v in dist if v][:12]
    if not dist:
        return None
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.4 * len(dist)))
    ax.boxplot([v for _, v in dist], vert=False)
    ax.set_yticks(range(1, len(dist) + 1))
    ax.set_yticklabels([k for k, _ in dist], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time per decode step (ms)")
    title = "Decode steps: every timed step of every run" + (
        f" (the first {len(dist)} cases)" if len(gen) > len(dist) else "")
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    save_figure(fig, os.path.join(plot_dir, "decode_step_distribution.png"))
    plt.close(fig)
    return ("decode_step_distribution.png", title)


def make_plots(rows, plot_dir):
    gen = generations(rows)
    made = [
        heatmap(gen, "total_latency_ms", "Latency of one generation (ms) over batch size x "
                "input length", "total latency (ms)", "latency_heatmap.png", plot_dir,
                lambda v: f"{v:.3g}"),
        heatmap(gen, "e2e_tokens_per_s", "Throughput (generated tokens/s, end to end) over "
                "batch size x input length", "tokens/s", "throughput_heatmap.png", plot_dir,
                lambda v: f"{v:.0f}"),
        scaling(gen, plot_dir, lambda r: r.batch, "batch size", lambda r: r.input, "input",
                "batch_size_scaling.png", "Scaling with batch size (decode)",
                [("decode_ms_per_token_median", "decode time per token, median (ms)"),
                 ("decode_tokens_per_s", "decode throughput (tokens/s)")]),
        scaling(gen, plot_dir, lambda r: r.input, "input length (tokens)", lambda r: r.batch,
                "batch", "input_length_scaling.png", "Scaling with input length (prefill)",
                [("ttft_ms", "time to first token (ms)"),
                 ("prefill_tokens_per_s", "prefill throughput (tokens/s)")]),
        time_breakdown(gen, plot_dir),
        comparison(gen, plot_dir),
        memory(gen, plot_dir),
        distribution(gen, plot_dir),
    ]
    return [m for m in made if m]
