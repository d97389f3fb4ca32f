"""The op report's plots (matplotlib, Agg; the caller checked that it imports): bandwidth
efficiency against size per op with the measured-peak line, a speed-up heatmap (op x size class)
per backend, and a matmul roofline (GFLOP/s against arithmetic intensity under the measured copy
bandwidth and matmul ceilings). Each takes its numbers from the rows of analysis/ops_model.py.
"""

import math
import os
import re

from analysis.common import DTYPE_ORDER, OPTIONS, save_figure
from analysis.ops_model import OP_ORDER, SIZE_CLASSES, geomean

PLOT_NAMES = ["efficiency.png", "speedup_<backend>.png", "matmul_roofline.png"]
MARKERS = {"fp32": "o", "tf32": "s", "fp16": "^", "bf16": "v"}


def file_name(label):
    return "speedup_" + re.sub(r"[^A-Za-z0-9_.-]", "_", label) + ".png"


def remove_stale(plot_dir, made):
    """Plots of an earlier op report that this one did not make would pass for its own
    (--report-only leaves plots/ alone)."""
    if OPTIONS["report_only"]:
        return
    for name in os.listdir(plot_dir):
        if name not in made and (name in ("efficiency.png", "matmul_roofline.png") or
                                 re.fullmatch(r"speedup_.+\.png", name)):
            os.unlink(os.path.join(plot_dir, name))


def readable_log(axis):
    """Ticks at 1, 2 and 5 of each decade, labelled as plain numbers (1e+06 beyond 10^5)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def ordered_ops(rows):
    ops = {o.op for o in rows}
    return [op for op in OP_ORDER if op in ops] + sorted(ops - set(OP_ORDER))


def efficiency_plot(plt, rows, limits, plot_dir):
    points = [o for o in rows if o.eff is not None and not o.is_matmul]
    ops = ordered_ops(points)
    cols = min(4, max(1, len(ops)))
    nrows = max(1, math.ceil(len(ops) / cols))
    fig, axes = plt.subplots(nrows, cols, figsize=(4 * cols, 3 * nrows), squeeze=False)
    labels = list(dict.fromkeys(o.label for o in points))
    colours = {b: plt.get_cmap("tab10")(i % 10) for i, b in enumerate(labels)}
    for ax, op in zip(axes.flat, ops):
        mine = [o for o in points if o.op == op]
        for label in labels:
            for dt in DTYPE_ORDER:
                series = sorted(((o.elements, 100 * o.eff) for o in mine
                                 if o.label == label and o.dtype == dt and o.elements),
                                key=lambda p: p[0])
                if series:
                    # Every case a marker; the line joins the best case per element count only
                    # (variants of one op, such as the reduced axis, share an element count).
                    ax.plot([p[0] for p in series], [p[1] for p in series], lw=0,
                            marker=MARKERS.get(dt, "x"), ms=4, color=colours[label],
                            label=f"{label} {dt}")
                    best = {}
                    for x, y in series:
                        best[x] = max(best.get(x, y), y)
                    ax.plot(sorted(best), [best[x] for x in sorted(best)], lw=0.8,
                            color=colours[label])
        ax.axhline(100, ls="--", lw=1, color="k")
        ax.set_xscale("log")
        readable_log(ax.xaxis)
        ax.set_title(op, fontsize=9)
        ax.tick_params(which="both", labelsize=7)
        ax.set_ylim(bottom=0)
    for ax in list(axes.flat)[len(ops):]:
        ax.axis("off")
    peaks = [f"{d} {limits.peak_gbs(d):.4g} GB/s" for d in ("cuda", "cpu") if limits.peak_gbs(d)]
    if ops:
        handles, names = [], []
        for ax in axes.flat:
            for h, n in zip(*ax.get_legend_handles_labels()):
                if n not in names:
                    handles.append(h)
                    names.append(n)
        fig.legend(handles, names, fontsize=9, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.supxlabel("elements (input; log)", fontsize=9)
        fig.supylabel("% of the measured copy bandwidth", fontsize=9)
    else:
        axes.flat[0].text(0.5, 0.5, "no efficiency: no passed case with a measured bandwidth",
                          transform=axes.flat[0].transAxes, ha="center", fontsize=8)
    cached = any(100 * o.eff > 150 for o in points)
    fig.suptitle("Bandwidth efficiency against size (markers: every case; line: the best case "
                 "per size; dashed: the measured copy bandwidth, "
                 + (", ".join(peaks) or "not measured") + ")"
                 + ("\nabove 100%: the inputs fit in a cache faster than the measured copy"
                    if cached else ""), fontsize=10)
    fig.tight_layout()
    save_figure(fig, os.path.join(plot_dir, "efficiency.png"))
    plt.close(fig)
    return ("efficiency.png", "Bandwidth efficiency (GB/s over the measured copy bandwidth) "
            "against size, per op")


def heatmap_plot(plt, rows, label, plot_dir):
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

    mine = [o for o in rows if o.label == label and o.band]
    ops = ordered_ops(mine)
    sizes = [n for n in [n for n, _ in SIZE_CLASSES] + ["n/a"] if any(o.size == n for o in mine)]
    data = np.array([[geomean([o.ratio for o in mine if o.op == op and o.size == s]) or np.nan
                      for s in sizes] for op in ops], float)
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(sizes) + 2.5), max(3, 0.35 * len(ops) + 1.5)))
    cmap = plt.get_cmap("RdYlGn").copy()
    cmap.set_bad("lightgrey")
    logs = np.log2(data)
    finite = np.abs(logs[np.isfinite(logs)])
    span = max(1.0, float(finite.max())) if finite.size else 1.0
    im = ax.imshow(np.ma.masked_invalid(logs), aspect="auto", cmap=cmap,
                   norm=TwoSlopeNorm(vcenter=0, vmin=-span, vmax=span))
    ax.set_xticks(range(len(sizes)), sizes, fontsize=8)
    ax.set_yticks(range(len(ops)), ops, fontsize=8)
    for i in range(len(ops)):
        for j in range(len(sizes)):
            if not np.isnan(data[i, j]):
                ax.text(j, i, f"{data[i, j]:.2g}x", ha="center", va="center", fontsize=7)
    bar = fig.colorbar(im, ax=ax)
    bar.set_label("log2 of PyTorch time / backend time", fontsize=8)
    ax.set_title(f"{label}: speed-up against PyTorch (geometric mean per cell)", fontsize=9)
    name = file_name(label)
    save_figure(fig, os.path.join(plot_dir, name))
    plt.close(fig)
    return (name, f"{label}: speed-up against PyTorch per op and size class")


def roofline_plot(plt, rows, limits, plot_dir):
    import numpy as np

    pts = [o for o in rows if o.is_matmul and o.gflops and o.bytes and o.flop]
    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    labels = list(dict.fromkeys(o.label for o in pts))
    colours = {b: plt.get_cmap("tab10")(i % 10) for i, b in enumerate(labels)}
    series = {}  # (backend, dtype) -> its points, in legend order
    for o in pts:
        series.setdefault((o.label, o.dtype), []).append(o)
    # One scatter per series (one per point costs matplotlib a collection and an autoscale each).
    for (label, dtype), series_pts in series.items():
        ax.scatter([o.flop / o.bytes for o in series_pts], [o.gflops for o in series_pts],
                   color=colours[label], marker=MARKERS.get(dtype, "x"), s=30,
                   label=f"{label} {dtype}")
    if pts:
        ais = [o.flop / o.bytes for o in pts]
        grid = np.logspace(math.log10(min(ais) / 4), math.log10(max(ais) * 4), 200)
        devices = {o.device for o in pts}
        for dev in ("cuda", "cpu"):
            gbs = limits.peak_gbs(dev)
            if dev in devices and gbs:
                ax.plot(grid, gbs * grid, ":", lw=1, color="dimgrey",
                        label=f"{dev} copy bandwidth {gbs:.4g} GB/s")
        cuda_gbs = limits.peak_gbs("cuda")
        styles = {"fp32": "--", "tf32": "-.", "fp16": (0, (5, 1, 1, 1)), "bf16": (0, (8, 2))}
        for dt in sorted({o.dtype for o in pts if o.device == "cuda"},
                         key=lambda d: DTYPE_ORDER.index(d) if d in DTYPE_ORDER else 99):
            top = limits.ceiling_tflops(dt)
            if top:  # black, so that no ceiling takes a backend's colour
                roof = np.minimum(cuda_gbs * grid, top * 1e3) if cuda_gbs else grid * 0 + top * 1e3
                ax.plot(grid, roof, ls=styles.get(dt, "--"), lw=1, color="k",
                        label=f"{dt} ceiling {top:.4g} TFLOP/s")
        ax.set_xscale("log")
        ax.set_yscale("log")
        readable_log(ax.xaxis)
        readable_log(ax.yaxis)
        ax.legend(fontsize=6, loc="lower right")
    else:
        ax.text(0.5, 0.5, "no passed matmul case", transform=ax.transAxes, ha="center")
    ax.set_xlabel("arithmetic intensity, FLOP/byte (flop / bytes)")
    ax.set_ylabel("GFLOP/s (flop / primary time)")
    ax.set_title("Matmul roofline: measured copy bandwidth and matmul ceilings")
    save_figure(fig, os.path.join(plot_dir, "matmul_roofline.png"))
    plt.close(fig)
    return ("matmul_roofline.png", "Matmul roofline: GFLOP/s against arithmetic intensity under "
            "the measured limits")


def make_plots(rows, limits, plot_dir):
    """Writes the plots; returns [(file, caption)]."""
    import matplotlib.pyplot as plt

    made = [efficiency_plot(plt, rows, limits, plot_dir)]
    for label in dict.fromkeys(o.label for o in rows if o.band):
        made.append(heatmap_plot(plt, rows, label, plot_dir))
    made.append(roofline_plot(plt, rows, limits, plot_dir))
    return made
