"""The MLP suite's report (mymlp results, suite "mlp"): report.md with the lecture's tables filled
in (the example per implementation and dtype: time per call, per step forward and backward,
TFLOP/s, fraction of the measured matmul ceiling, peak memory, gradient check; the matmul dims
with TFLOP/s; each scaling study's times with the fitted exponent b and R^2 beside the expected
one, recomputed here from the cases named base and scale_<parameter>_x<factor>; the top-ops table
of each profile taken), the cases that did not pass; plots/ with time against factor per
parameter on log-log axes (one line per implementation and dtype) and matmul TFLOP/s against
dim."""

import math
import os

from analysis.common import (command_line, fmt, md_table, number, output_folders, passed,
                             plot_note, plots_markdown, primary, save_figure, system_section,
                             write_atomic, remove_stale_plots)

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


def studies(results):
    """{(backend, dtype, parameter): [(factor, ms)]} from base and scale_* cases."""
    base, out = {}, {}
    for r in results:
        ms = primary(r)[0]
        if not passed(r) or ms is None:
            continue
        key = (r["backend"], r.get("dtype", "fp32"))
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


def make_plots(results, groups, plot_dir):
    import matplotlib.pyplot as plt
    made = []
    for param in PARAMETERS:
        lines = {k: v for k, v in groups.items() if k[2] == param}
        if not lines:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for (backend, dtype, _), pts in sorted(lines.items()):
            ax.plot([f for f, _ in pts], [t for _, t in pts], marker="o", label=f"{backend} {dtype}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"factor on {param}")
        ax.set_ylabel("time per run_mlp call, ms")
        ax.set_title(f"scaling {param} (expected exponent {EXPECTED[param]})")
        ax.legend(fontsize=7)
        name = f"scaling_{param}.png"
        save_figure(fig, os.path.join(plot_dir, name))
        plt.close(fig)
        made.append((name, f"Time against the factor on {param}, log-log"))
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
        ax.set_xlabel("n (square matmul)")
        ax.set_ylabel("TFLOP/s")
        ax.legend(fontsize=7)
        save_figure(fig, os.path.join(plot_dir, "matmul_tflops.png"))
        plt.close(fig)
        made.append(("matmul_tflops.png", "Matmul TFLOP/s against n"))
    return made


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
    bad = [r for r in results if r["status"] != "passed"]
    out += ["## Cases that did not pass", ""]
    out += (md_table(["problem", "name", "backend", "status", "reason"],
                     [[r["problem"], r.get("name", ""), r["backend"], r["status"],
                       r.get("reason", "")] for r in bad]) if bad else ["None."]) + [""]
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
    path = os.path.join(out_dir, "report.md")
    write_atomic(path, build_report(inputs, note, plots))
    print(f"wrote {path} and {len(plots)} plot(s) in {plot_dir}")
