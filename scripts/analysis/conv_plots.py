"""The conv report's plots: a heatmap of each backend's time per problem, the times and compile
times per problem, and a roofline (achieved FLOP/s against arithmetic intensity).
"""

import math
import os

from analysis.common import DTYPE_ORDER, intensity, save_figure
from analysis.conv_model import achieved_tflops, backend_order, cell_label, group_problems

# Above this many problems the heatmap and bar plots run down the page (a row per problem).
TALL_PLOT_PROBLEMS = 40


def make_plots(inputs, plot_dir, bandwidth, peaks):
    """Writes the plots; returns ([(file, caption)], number of roofline points)."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    import numpy as np

    groups = group_problems(inputs)
    keys = [k for k, g in groups.items() if any(o.time is not None for o in g)]
    labels = [cell_label(k, groups[k]) for k in keys]
    backends = [b for b in backend_order(groups)
                if any(o.label == b and o.time is not None for k in keys for o in groups[k])]
    made = []

    def value(k, b, what):
        for o in groups[k]:
            if o.label == b:
                if what == "time":
                    return o.time
                return o.compile if o.time is not None else None
        return None

    # Heatmap: primary time per backend x problem, log colour scale.
    # Many problems: one row per problem (labels stay horizontal and readable), else one column.
    tall = len(keys) > TALL_PLOT_PROBLEMS
    data = np.array([[value(k, b, "time") or np.nan for k in keys] for b in backends], float)
    if tall:
        data = data.T
        fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(backends) + 4), 0.17 * len(keys) + 2))
    else:
        fig, ax = plt.subplots(figsize=(min(40, max(6, 0.6 * len(keys) + 3)),
                                        max(2.5, 0.5 * len(backends) + 1.5)))
    masked = np.ma.masked_invalid(data)
    cmap = plt.get_cmap("viridis").copy()
    cmap.set_bad("lightgrey")
    lo, hi = np.nanmin(data), np.nanmax(data)
    im = ax.imshow(masked, aspect="auto", cmap=cmap,
                   norm=LogNorm(vmin=lo, vmax=hi if hi > lo else lo * 1.0001))
    if tall:
        ax.set_yticks(range(len(keys)), labels, fontsize=7)
        ax.set_xticks(range(len(backends)), backends, rotation=30, ha="right", fontsize=8)
        ax.xaxis.tick_top()
        plt.setp(ax.get_xticklabels(), rotation=30, ha="left")
    else:
        ax.set_xticks(range(len(keys)), labels, rotation=60, ha="right", fontsize=8)
        ax.set_yticks(range(len(backends)), backends, fontsize=8)
    if data.size <= 400:
        for i in range(data.shape[0]):
            for j in range(data.shape[1]):
                if not np.isnan(data[i, j]):
                    light = im.norm(data[i, j]) > 0.6  # viridis is light at the top
                    ax.text(j, i, f"{data[i, j]:.3g}", ha="center", va="center", fontsize=6,
                            color="black" if light else "white")
    bar = fig.colorbar(im, ax=ax, label="ms (GPU median, else total median)",
                       **({"shrink": min(1.0, 6 / (0.17 * len(keys) + 2)), "anchor": (0, 1)}
                          if tall else {}))
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    bar.ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    bar.ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_title("Time per call, passed cases (grey: not passed or not run)")
    save_figure(fig, os.path.join(plot_dir, "heatmap.png"))
    plt.close(fig)
    made.append(("heatmap.png", "Time per backend and problem (log colour scale)"))

    def grouped_bars(what, ylabel, title, name, caption):
        if tall:  # one row of bars per problem
            fig, ax = plt.subplots(figsize=(9, 0.09 * len(keys) * max(2, len(backends)) + 2))
        else:
            fig, ax = plt.subplots(figsize=(min(40, max(6, 0.25 * len(keys) * len(backends)
                                                        + 3)), 4.5))
        width = 0.8 / max(1, len(backends))
        x = np.arange(len(keys))
        drawn = False
        for i, b in enumerate(backends):
            vals = [value(k, b, what) for k in keys]
            vals = [v if v is not None and v > 0 else np.nan for v in vals]
            if all(np.isnan(v) for v in vals):
                continue
            at = x + (i - (len(backends) - 1) / 2) * width
            if tall:
                ax.barh(at, vals, width, label=b)
            else:
                ax.bar(at, vals, width, label=b)
            drawn = True
        if drawn:
            (ax.set_xscale if tall else ax.set_yscale)("log")
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
        else:
            ax.text(0.5, 0.5, "no values", transform=ax.transAxes, ha="center")
        if tall:
            ax.set_yticks(x, labels, fontsize=7)
            ax.set_ylim(len(keys) - 0.5, -0.5)
            ax.set_xlabel(ylabel)
            ax.xaxis.tick_top()
            ax.xaxis.set_label_position("top")
            ax.grid(True, axis="x", alpha=0.3)
            ax.set_title(title, pad=30)
            save_figure(fig, os.path.join(plot_dir, name))
            plt.close(fig)
            made.append((name, caption))
            return
        ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=8)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        save_figure(fig, os.path.join(plot_dir, name))
        plt.close(fig)
        made.append((name, caption))

    grouped_bars("time", "ms (log)", "Time per call (GPU median, else total median), passed cases",
                 "times.png", "Time per call, grouped by problem")
    grouped_bars("compile", "compile_time_ms (log)", "Compile time (setup: JIT, plan, search)",
                 "compile_times.png", "Compile time per backend and problem")

    # Roofline of the GPU backends.
    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    points = 0
    markers = {"fp32": "o", "tf32": "s", "fp16": "^", "bf16": "v"}
    colours = {b: plt.get_cmap("tab10")(i % 10) for i, b in enumerate(backends)}
    series = {}  # "backend dtype" -> (colour, marker, intensities, TFLOP/s), legend order
    xs = []
    for k in keys:
        for o in groups[k]:
            if o.device != "cuda":
                continue
            ai, tf = intensity(o.r), achieved_tflops(o)
            if ai is None or tf is None or ai <= 0 or tf <= 0:
                continue
            ser = series.setdefault(f"{o.label} {k[2]}", (colours.get(o.label, "k"),
                                                        markers.get(k[2], "x"), [], []))
            ser[2].append(ai)
            ser[3].append(tf)
            xs.append(ai)
            points += 1
    # One scatter per series (one per point costs matplotlib a collection and an autoscale each:
    # most of a large report's time).
    for lab, (colour, marker, ais, tfs) in series.items():
        ax.scatter(ais, tfs, color=colour, marker=marker, label=lab, s=30)
    if points:
        x_lo, x_hi = min(xs) / 2, max(xs) * 2
        grid = np.logspace(math.log10(x_lo), math.log10(x_hi), 200)
        dts = sorted({k[2] for k in keys}, key=lambda d: DTYPE_ORDER.index(d)
                     if d in DTYPE_ORDER else 99)
        for dt in dts:
            if dt in peaks and bandwidth:
                ax.plot(grid, np.minimum(bandwidth[0] * grid / 1e3, peaks[dt][0]), "--", lw=1,
                        label=f"roof {dt}: {peaks[dt][0]:.4g} TFLOP/s")
            elif dt in peaks:
                ax.axhline(peaks[dt][0], ls="--", lw=1,
                           label=f"peak {dt}: {peaks[dt][0]:.4g} TFLOP/s")
        if bandwidth and not any(dt in peaks for dt in dts):
            ax.plot(grid, bandwidth[0] * grid / 1e3, "--", lw=1,
                    label=f"memory roof {bandwidth[0]:.4g} GB/s")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend(fontsize=6, loc="lower right")
        if not bandwidth and not peaks:
            ax.set_title("GPU backends (no ceilings recorded in system.gpus)")
        else:
            ax.set_title("Roofline, GPU backends")
    else:  # no passed GPU case: no empty frame (the Roofline section says why)
        plt.close(fig)
        return made, points
    ax.set_xlabel("arithmetic intensity, FLOP/byte (flop / bytes)")
    ax.set_ylabel("achieved TFLOP/s (flop / GPU median)")
    save_figure(fig, os.path.join(plot_dir, "roofline.png"))
    plt.close(fig)
    made.append(("roofline.png", "Roofline: achieved FLOP/s against arithmetic intensity"))
    return made, points
