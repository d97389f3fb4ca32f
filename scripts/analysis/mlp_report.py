"""The MLP suite's report (mymlp results, suite "mlp"): report.md with the lecture's tables filled
in (the example per implementation and dtype: time per call, per step forward and backward,
TFLOP/s, fraction of the measured matmul ceiling, peak memory, gradient check; the matmul dims
with TFLOP/s; each scaling study's times with the fitted exponent b and R^2 beside the expected
one, recomputed here from the cases named base and scale_<parameter>_x<factor>; the top-ops table
of each profile taken), the cases that did not pass; plots/ with time against factor per
parameter on log-log axes (one line per implementation and dtype) and matmul TFLOP/s against
dim. A "Targets" section states issue 12's targets against what the inputs hold (met, missed by
how much, or not measured): libtorch_graph <= 0.2x libtorch_eager at the example; at dim 4096 the
CUDA implementations at >= 95% of the matmul ceiling in fp32 and >= 70% in tf32 and bf16;
cublaslt_fused and own_cuda <= libtorch_graph at every size of the scaling studies; C++
libtorch_eager <=
Python PyTorch eager (scripts/references/mlp_reference.py's records, given as another input, e.g.
the run folder's references/python_reference.json) on the same configuration, device and dtype."""

import math
import os

from analysis.common import (command_line, fmt, md_table, number, output_folders, passed,
                             plot_note, plots_markdown, primary, save_figure, system_section,
                             write_atomic, write_report, remove_stale_plots, NOT_RUN,
                             not_run_lines)
from analysis.slots import time_split_section

SUMMARY = ("report.md holds the example's table, the matmul dims, each scaling study with its "
           "fitted exponent, the profiles' top ops and the cases that did not pass; plots/ holds "
           "scaling_<parameter>.png and matmul_tflops.png.")
PARAMETERS = ["num_steps", "num_layers", "batch_size", "dim"]
EXPECTED = {"num_steps": 1, "num_layers": 1, "batch_size": 1, "dim": 2}


def fit(points):
    """Least squares of log t = log a + b log f: (b, R^2), None with fewer than 2 points."""
    pts = [(math.log(f), math.log(t)) for f, t in points if f > 0 and t and t > 0]
    if len(pts) < 2:
        return None
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    sxy = sum((x - mx) * (y - my) for x, y in pts)
    syy = sum((y - my) ** 2 for _, y in pts)
    if sxx <= 0:
        return None
    b = sxy / sxx
    res = sum((y - my - b * (x - mx)) ** 2 for x, y in pts)
    return b, (1 - res / syy) if syy > 0 else 1.0


def timing_of(r):
    """The timing mode of a record without its detail ("pure:back-to-back" -> "pure"); records
    written before the field existed were timed for real."""
    return (r.get("timing_mode") or "real").split(":", 1)[0]


def studies(results):
    """{(backend, dtype, parameter): [(factor, ms)]} from base and scale_* cases. Where the
    inputs hold more than one timing mode (--timing both), each mode is a study of its own and
    the backend is named with it ("cublaslt_fused (pure)")."""
    base, out = {}, {}
    several = len({timing_of(r) for r in results}) > 1
    for r in results:
        ms = primary(r)[0]
        if not passed(r) or ms is None:
            continue
        backend = f"{r['backend']} ({timing_of(r)})" if several else r["backend"]
        key = (backend, r.get("dtype", "fp32"))
        name = r.get("name", "")
        if name == "base":
            base[key] = ms
        elif name.startswith("scale_") and "_x" in name:
            param, factor = name[6:].rsplit("_x", 1)
            out.setdefault(key + (param,), []).append((float(factor), ms))
    for k, pts in out.items():
        if k[:2] in base:
            pts.append((1.0, base[k[:2]]))
        pts.sort()
    return out


def base_size(results):
    """The base case's size as text ("dim 512, num_layers 4, ..."), or None."""
    for r in results:
        if r.get("name") == "base":
            p = r.get("params") or {}
            return ", ".join(f"{k} {p[k]}" for k in ("dim", "num_layers", "batch_size",
                                                     "num_steps") if k in p)
    return None


def make_plots(results, groups, plot_dir):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    made = []
    base = base_size(results)
    for param in PARAMETERS:
        lines = {k: v for k, v in groups.items() if k[2] == param}
        if not lines:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.8))
        cmap = plt.get_cmap("tab10")
        for i, ((backend, dtype, _), pts) in enumerate(sorted(lines.items())):
            colour = cmap(i % 10)
            f = fit(pts)
            label = f"{backend} {dtype}" + (f", fitted exponent {f[0]:.2f}" if f else "")
            ax.plot([x for x, _ in pts], [t for _, t in pts], "o", color=colour, label=label)
            if f:  # the least-squares line of log t on log factor
                lx = [math.log(x) for x, t in pts if x > 0 and t and t > 0]
                ly = [math.log(t) for x, t in pts if x > 0 and t and t > 0]
                log_a = sum(ly) / len(ly) - f[0] * sum(lx) / len(lx)
                xs = sorted(x for x, _ in pts)
                ax.plot(xs, [math.exp(log_a) * x ** f[0] for x in xs], "-", color=colour,
                        alpha=0.7)
        factors = sorted({x for pts in lines.values() for x, _ in pts})
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(factors)
        ax.set_xticklabels([f"{x:g}x" for x in factors])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(f"factor on {param} (1x = the base case)")
        ax.set_ylabel("time per run_mlp call (ms)")
        ax.set_title(f"Scaling {param}: time against factor, log-log (expected exponent "
                     f"{EXPECTED[param]})" + (f"\nbase: {base}" if base else ""), fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
        name = f"scaling_{param}.png"
        save_figure(fig, os.path.join(plot_dir, name))
        plt.close(fig)
        made.append((name, f"Time against the factor on {param}, log-log, points and the "
                           f"fitted line" + (f" (base: {base})" if base else "")))
    mm = {}
    for r in results:
        p = r.get("params") or {}
        t = number((r.get("metrics") or {}).get("tflops"))
        if passed(r) and p.get("kind") == "mm" and t:
            mm.setdefault((r["backend"], r.get("dtype")), []).append((p.get("n"), t))
    if mm:
        fig, ax = plt.subplots(figsize=(6, 4))
        for (backend, dtype), pts in sorted(mm.items()):
            pts.sort()
            ax.plot([n for n, _ in pts], [t for _, t in pts], marker="o", label=f"{backend} {dtype}")
        ax.set_xscale("log", base=2)
        ns = sorted({n for pts in mm.values() for n, _ in pts})
        ax.set_xticks(ns)
        ax.set_xticklabels([str(n) for n in ns])
        ax.minorticks_off()
        ax.set_xlabel("n (square n x n x n matmul)")
        ax.set_ylabel("achieved TFLOP/s (metrics.tflops)")
        ax.set_title("Matmul throughput against n")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        save_figure(fig, os.path.join(plot_dir, "matmul_tflops.png"))
        plt.close(fig)
        made.append(("matmul_tflops.png", "Matmul TFLOP/s against n"))
    return made


def config_key(r):
    """(dim, num_layers, batch_size, num_steps, dtype, device, timing mode) of an MLP record:
    the targets compare records of one configuration timed the same way."""
    p = r.get("params") or {}
    return (p.get("dim"), p.get("num_layers"), p.get("batch_size"), p.get("num_steps"),
            r.get("dtype", "fp32"), r.get("device", ""), timing_of(r))


def median_of(r, figure):
    v = r.get(figure)
    return number(v.get("median")) if isinstance(v, dict) else None


def config_text(r):
    p = r["params"]
    mode = "" if timing_of(r) == "real" else f" ({timing_of(r)})"
    return (f"d{p['dim']} L{p['num_layers']} B{p['batch_size']} s{p['num_steps']} "
            f"{r.get('dtype', 'fp32')}{mode}")


def graph_rows(mlps, by, backend):
    """The rows of 'backend <= libtorch_graph at every scaling-study size', one per dtype and
    timing mode."""
    rows, pairs = [], []
    for f in mlps:
        name = str(f.get("name", ""))
        if f["backend"] != backend or not (name == "base" or name.startswith("scale_")):
            continue
        g = by.get((config_key(f), "libtorch_graph"))
        fm, gm = primary(f)[0], primary(g)[0] if g else None
        if fm is not None and gm:
            pairs.append((fm / gm, f, fm, gm))
    for dtype, mode in sorted({(f.get("dtype", "fp32"), timing_of(f)) for _, f, _, _ in pairs}):
        mine = [x for x in pairs if (x[1].get("dtype", "fp32"), timing_of(x[1])) == (dtype, mode)]
        worst = max(mine, key=lambda x: x[0])
        over = sum(1 for x in mine if x[0] > 1)
        timed = "" if mode == "real" else f" ({mode})"
        rows.append([f"{backend} <= libtorch_graph at every scaling-study size",
                     f"{len(mine)} sizes in {dtype}{timed}; worst {config_text(worst[1])}",
                     f"{fmt(worst[2])} / {fmt(worst[3])} ms = {worst[0]:.3f}x",
                     "met" if over == 0 else f"missed at {over} of {len(mine)} sizes "
                                             f"(worst by {worst[0] - 1:.1%})"])
    return rows


def targets(results):
    """Rows [target, case, figures, verdict] of issue 12's targets (and issue 26's own_cuda row)."""
    mlps = [r for r in results if passed(r) and (r.get("params") or {}).get("kind") == "mlp"]
    by = {}
    for r in mlps:
        by.setdefault((config_key(r), r["backend"]), r)
    rows = []

    def backend_record(by, key, device):
        """The eager LibTorch record on device: libtorch_<device>, or libtorch_eager_<device> as
        results written before the suites shared one backend naming scheme name it."""
        return by.get((key, f"libtorch_{device}")) or by.get((key, f"libtorch_eager_{device}"))

    # libtorch_graph <= 0.2x libtorch_eager at the example.
    for g in [r for r in mlps if r.get("name") == "example" and r["backend"] == "libtorch_graph"]:
        e = backend_record(by, config_key(g), "cuda")
        gm, em = primary(g)[0], primary(e)[0] if e else None
        if gm is None or not em:
            continue
        ratio = gm / em
        rows.append(["libtorch_graph <= 0.2x libtorch_eager_cuda (the example)", config_text(g),
                     f"{fmt(gm)} / {fmt(em)} ms = {ratio:.3f}x",
                     "met" if ratio <= 0.2 else f"missed by {ratio / 0.2 - 1:.1%}"])
    # Dim 4096: fraction of the measured ceiling.
    for r in mlps:
        if r["params"].get("dim") != 4096 or r.get("device") != "cuda":
            continue
        frac = number((r.get("metrics") or {}).get("fraction_of_ceiling"))
        if frac is None:
            continue
        bar = 0.95 if r.get("dtype") == "fp32" else 0.70
        rows.append([f"dim 4096 at >= {bar:.0%} of the matmul ceiling",
                     f"{config_text(r)} {r['backend']}", f"{frac:.1%}",
                     "met" if frac >= bar else f"missed by {bar - frac:.1%} points"])
    # cublaslt_fused and own_cuda (the latter issue 26's target) <= libtorch_graph at every
    # scaling-study size.
    for backend in ("cublaslt_fused", "own_cuda"):
        rows += graph_rows(mlps, by, backend)
    # C++ libtorch_eager <= Python PyTorch eager: host clock around call + synchronize on both.
    for py in [r for r in mlps if r["backend"] == "pytorch_python_eager"]:
        cpp = backend_record(by, config_key(py), py.get("device", "cuda"))
        pm, cm = median_of(py, "total_time_ms"), median_of(cpp, "total_time_ms") if cpp else None
        if pm is None or cm is None:
            continue
        ratio = cm / pm
        rows.append([f"C++ libtorch_eager_{py.get('device')} <= Python eager", config_text(py),
                     f"{fmt(cm)} / {fmt(pm)} ms (total median) = {ratio:.3f}x",
                     "met" if ratio <= 1 else f"missed by {ratio - 1:.1%}"])
    return rows


def build_report(inputs, note, plots):
    results = [r for d in inputs for r in d["results"]]
    out = ["# mymlp results report", "", f"Made by `{command_line()}` from:", ""]
    out += [f"- `{d['path']}`: {len(d['results'])} results" for d in inputs] + [""]
    mlps = [r for r in results if (r.get("params") or {}).get("kind") == "mlp"
            and not str(r.get("name", "")).startswith(("base", "scale_"))]
    rows = []
    for r in mlps:
        m, p = r.get("metrics") or {}, r.get("params") or {}
        ms = primary(r)[0]
        frac = number(m.get("fraction_of_ceiling"))
        rows.append([r["problem"], r["backend"], r.get("dtype", ""), r["status"], fmt(ms),
                     fmt(number(m.get("forward_ms"))), fmt(number(m.get("backward_ms"))),
                     fmt(number(m.get("tflops"))), "n/a" if frac is None else f"{100 * frac:.1f}%",
                     fmt((number(m.get("peak_memory_bytes")) or 0) / 2**20 or None),
                     fmt(number((r.get("correctness") or {}).get("rel_l2_err")))])
    out += ["## run_mlp (the example and other configurations)", "",
            "ms = median time per call (GPU time where measured, else total); forward and "
            "backward = medians per step, measured apart after the sampling; TFLOP/s = "
            "6*B*D^2*L*S / ms; % ceiling = against the measured matmul ceiling of the device and "
            "dtype (`system.mlp_matmul_ceiling`); grad err = worst parameter's relative L2 error "
            "against float64.", ""]
    out += md_table(["problem", "backend", "dtype", "status", "ms/call", "forward ms",
                     "backward ms", "TFLOP/s", "% ceiling", "peak MiB", "grad err"], rows) + [""]
    mm = [r for r in results if (r.get("params") or {}).get("kind") == "mm"]
    if mm:
        out += ["## Square matmuls", ""] + md_table(
            ["problem", "backend", "status", "ms", "TFLOP/s"],
            [[r["problem"], r["backend"], r["status"], fmt(primary(r)[0]),
              fmt(number((r.get("metrics") or {}).get("tflops")))] for r in mm]) + [""]
    groups = studies(results)
    if groups:
        out += ["## Scaling studies", "",
                "time = a x factor^b fitted by least squares on log time against log factor "
                "(factor 1 = the base).", ""]
        rows = []
        for (backend, dtype, param), pts in sorted(groups.items(),
                                                   key=lambda kv: (PARAMETERS.index(kv[0][2])
                                                                   if kv[0][2] in PARAMETERS
                                                                   else 9, kv[0])):
            f = fit(pts)
            rows.append([param, backend, dtype, ", ".join(f"{x:g}" for x, _ in pts),
                         ", ".join(fmt(t) for _, t in pts),
                         "n/a" if f is None else f"{f[0]:.3f}",
                         "n/a" if f is None else f"{f[1]:.4f}", str(EXPECTED.get(param, "?"))])
        out += md_table(["parameter", "backend", "dtype", "factors", "ms", "b", "R^2",
                         "expected"], rows) + [""]
    for r in results:
        prof = (r.get("extra") or {}).get("profile")
        if isinstance(prof, dict) and prof.get("top_ops"):
            out += [f"## Profile: {r['backend']} {r['problem']}", "",
                    f"{prof.get('profiler', '')}; sorted by {prof.get('sort_by')}; trace "
                    f"`{prof.get('trace_file')}`, stacks `{prof.get('stacks_file')}`.", ""]
            out += md_table(["op", "calls", "self CPU us", "CPU total us", "self CUDA us",
                             "CUDA total us"],
                            [[o["name"], str(o["calls"]), fmt(o["self_cpu_us"]),
                              fmt(o["cpu_total_us"]), fmt(o["self_cuda_us"]),
                              fmt(o["cuda_total_us"])] for o in prof["top_ops"][:15]]) + [""]
    rows = targets(results)
    out += ["## Targets (issue 12)", ""]
    out += (md_table(["target", "case", "figures", "verdict"], rows) if rows else
            ["None of the targets' cases is in the inputs."]) + [""]
    bad = [r for r in results if r["status"] not in ("passed",) + NOT_RUN]
    not_run = [(r["backend"], r["status"], r.get("reason")) for r in results
               if r["status"] in NOT_RUN]
    out += ["## Cases that did not pass", ""]
    if not_run:
        out += ["Not run: skipped or unsupported (one line per backend and reason):", ""]
        out += not_run_lines(not_run) + [""]
    out += (md_table(["problem", "name", "backend", "status", "reason"],
                     [[r["problem"], r.get("name", ""), r["backend"], r["status"],
                       r.get("reason", "")] for r in bad]) if bad else
            ["Every case that ran passed." if not_run else "None."]) + [""]
    out += time_split_section(inputs)
    out += plots_markdown(note, plots)
    out += ["## System", ""]
    for d in inputs:
        out += system_section(d)
    return "\n".join(out).rstrip() + "\n"


def report_main(inputs, paths, output_dir):
    out_dir, plot_dir = output_folders(paths, output_dir)
    results = [r for d in inputs for r in d["results"]]
    note = plot_note(any(passed(r) for r in results))
    plots = make_plots(results, studies(results), plot_dir) if note is None else []
    remove_stale_plots(plot_dir, [f"scaling_{p}.png" for p in PARAMETERS] + ["matmul_tflops.png"],
                       [n for n, _ in plots])
    write_report(out_dir, build_report(inputs, note, plots), plot_dir, len(plots))
