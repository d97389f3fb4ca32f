"""The conv suite's report (myconv results, and scripts/references/inductor_reference.py's
torch_inductor records given beside them): report.md with the system and versions, the cases
that need attention, winners, per problem a table of backends (medians, compile time, first run,
speed-up vs LibTorch on the same device, correctness), compile overhead, ratios against cuDNN and
the roofline ceilings; plots/ with a heatmap, times, compile times and a roofline. Every number is
read from the input files or computed from them by the formula named beside it.
"""

import math

from results.results_schema import SCHEMA_VERSION

from analysis.common import (DTYPE_ORDER, command_line, correctness, figure_name, fmt, fmt_x,
                             gpu_info, gpu_models_note, intensity, md_table, median, number,
                             output_folders, passed, plot_note, plots_markdown, remove_stale_plots,
                             shorten, system_section, write_report, trust_section, NOT_RUN,
                             not_run_lines)
from analysis.conv_model import (achieved_tflops, ceilings, cell_label, comparable, group_problems,
                                 problem_title, reference_row, roof_tflops, speedup, winner)
from analysis.conv_plots import make_plots
from analysis.slots import time_split_section

# Ratio tables: these GPU backends' GPU medians over cuDNN's.
RATIO_BASE = "cudnn"
RATIO_BACKENDS = [("ours/cuDNN", "im2col_gemm_cuda"), ("Halide/cuDNN", "halide_cuda"),
                  ("LibTorch/cuDNN", "libtorch_cuda")]
# Columns shown only where the inputs hold the backend (scripts/references/inductor_reference.py's
# records).
RATIO_BACKENDS_IF_PRESENT = [("Inductor/cuDNN", "torch_inductor"),
                             ("Inductor max-autotune/cuDNN", "torch_inductor_max_autotune")]
ATTENTION_STATUSES = ("incorrect", "failed", "timeout")
PLOT_FILES = ["heatmap.png", "times.png", "compile_times.png", "roofline.png"]


# ---- the report ----------------------------------------------------------------------------

def attention_section(groups):
    rows = []
    for key, group in groups.items():
        for o in group:
            if o.status not in ATTENTION_STATUSES and not o.throttled:
                continue
            c = correctness(o.r)
            detail = []
            if o.status == "incorrect":
                detail.append(f"rel L2 err {fmt(number(c.get('rel_l2_err')))}, max abs err "
                              f"{fmt(number(c.get('max_abs_err')))}, mismatches "
                              f"{c.get('mismatches', 'n/a')}/{c.get('elements', 'n/a')}")
            if o.r.get("reason"):
                detail.append(shorten(o.r["reason"]))
            if o.throttled:
                clk = o.r.get("clocks") if isinstance(o.r.get("clocks"), dict) else {}
                detail.append("throttled: SM clock " + fmt(number(clk.get("sm_mhz_before"))) +
                              " -> " + fmt(number(clk.get("sm_mhz_after"))) + " MHz of " +
                              fmt(number(clk.get("sm_max_mhz"))))
                reasons = [x for k in ("reasons_before", "reasons_after")
                           for x in (clk.get(k) if isinstance(clk.get(k), list) else [])]
                if reasons:
                    detail.append("reasons: " + ", ".join(dict.fromkeys(map(str, reasons))))
            rows.append([o.label, o.r["problem"], key[2], key[3], o.status,
                         "yes" if o.throttled else "no", "; ".join(detail)])
    out = ["## Needs attention: incorrect, failed, timed-out or throttled cases", ""]
    if not rows:
        return out + ["None: no case is incorrect, failed, timed out or throttled.", ""]
    return out + md_table(["backend", "problem", "dtype", "layout", "status", "throttled",
                           "detail"], rows) + [""]


def devices_present(groups):
    present = {o.device for g in groups.values() for o in g}
    return [d for d in ("cuda", "cpu") if d in present] + sorted(present - {"cuda", "cpu"})


def winners_section(groups):
    rows = []
    devices = devices_present(groups)
    for key, group in groups.items():
        best = winner(group)
        if best is None:
            continue
        per_device = []
        for dev in devices:
            w = winner(group, dev)
            per_device.append(f"{w.label} ({fmt(w.time)} ms)" if w else "n/a")
        rows.append([cell_label(key, group), key[1], best.label, best.device, fmt(best.time),
                     figure_name(best.figure)] + per_device)
    out = ["## Winners", "",
           "The fastest passed backend per problem by its primary time (GPU median when present, "
           "else total median; across devices this sets a GPU median beside a CPU wall time), and "
           "the fastest per device. Times in ms.", ""]
    if not rows:
        return out + ["No passed case: no winner.", ""]
    out += md_table(["problem", "descriptor", "winner", "device", "time ms", "time is"]
                    + [f"fastest {d}" for d in devices], rows) + [""]
    # Wins per backend: of the problems it ran (passed or not), how many it was fastest on,
    # overall and among the backends of its own device.
    ran, won, won_dev, dev_of = {}, {}, {}, {}
    for group in groups.values():
        best = winner(group)
        best_on = {dev: winner(group, dev) for dev in devices}
        for o in group:
            if o.status in ("skipped", "unsupported"):
                continue
            ran[o.label] = ran.get(o.label, 0) + 1
            dev_of[o.label] = o.device
            won[o.label] = won.get(o.label, 0) + (o is best)
            won_dev[o.label] = won_dev.get(o.label, 0) + (o is best_on[o.device])
    order = sorted(ran, key=lambda b: (devices.index(dev_of[b]), -won_dev[b], b))
    wins = [[b, dev_of[b], str(ran[b]), str(won[b]), str(won_dev[b])] for b in order]
    return out + ["Wins per backend, counted from the table above (problems it ran: passed, "
                  "incorrect, failed or timed out).", ""] + md_table(
        ["backend", "device", "problems run", "fastest overall", "fastest on its device"],
        wins) + [""]


def problems_section(groups, bandwidth, peaks):
    out = ["## Per problem", "",
           "Times are medians in ms (`cpu_time_ms`, `gpu_time_ms`, `total_time_ms`). Speed-up = "
           "primary time of LibTorch on the same device (`libtorch_cuda` for cuda backends, "
           "`libtorch_cpu` for cpu ones) / the backend's primary time, both GPU medians or else "
           "both total medians. GFLOP/s = `flop` / primary time; % roof = achieved FLOP/s "
           "(`flop` / GPU median) / min(peak FLOP/s of the dtype, peak bandwidth x `flop`/`bytes`)"
           " for GPU backends, where `system.gpus[0]` gives the ceilings.", ""]
    show_mode = any(isinstance(o.r.get("timing_mode"), str) and o.r.get("timing_mode")
                    for g in groups.values() for o in g)
    for key, group in groups.items():
        r0 = group[0].r
        flop, nbytes = number(r0.get("flop")), number(r0.get("bytes"))
        ai = intensity(r0)
        out += [f"### {problem_title(key, group)}", "",
                f"{fmt(flop)} FLOP, {fmt(nbytes)} bytes, arithmetic intensity {fmt(ai)} FLOP/byte.",
                ""]
        headers = ["backend", "device", "status", "GPU ms", "CPU ms", "total ms", "compile ms",
                   "first run ms", "speed-up vs LibTorch", "GFLOP/s", "% roof", "correct",
                   "rel L2 err"]
        if show_mode:
            headers.append("timing")
        headers.append("note")
        rows = []
        # A problem measured under several names (shape files that share it): each measurement
        # is a row of its own, named.
        labels = [o.label for o in group]
        for o in group:
            label = o.label
            if labels.count(label) > 1 and o.r.get("name"):
                label = f"{label} ({o.r['name']})"
            c = correctness(o.r)
            if c:
                ok = c.get("passed") is True and c.get("shape_ok", True) is not False
                correct = "yes" if ok else "NO"
            else:
                correct = "-"
            gflops = None
            if o.time is not None and flop is not None and o.time > 0:
                gflops = flop / (o.time * 1e-3) / 1e9
            roof_pct = None
            if o.device == "cuda":
                achieved = achieved_tflops(o)
                roof = roof_tflops(ai, key[2], bandwidth, peaks)
                if achieved is not None and roof:
                    roof_pct = 100 * achieved / roof
            note = []
            if o.throttled:
                note.append("THROTTLED")
            if o.r.get("cold_cache") is True:
                note.append("cold cache")
            if o.status != "passed" and o.r.get("reason"):
                note.append(shorten(o.r["reason"], 90))
            row = [label, o.device, o.status, fmt(median(o.r, "gpu_time_ms")),
                   fmt(median(o.r, "cpu_time_ms")), fmt(median(o.r, "total_time_ms")),
                   fmt(o.compile), fmt(number(o.r.get("first_run_ms"))),
                   fmt_x(speedup(group, o)) if o.time is not None else "n/a", fmt(gflops),
                   fmt(roof_pct, 3), correct, fmt(number(c.get("rel_l2_err")), 3)]
            if show_mode:
                mode = o.r.get("timing_mode") or ""
                runs = o.r.get("runs_per_sample")
                row.append(mode + (f" x{runs}" if isinstance(runs, int) and runs > 1 else ""))
            row.append("; ".join(note))
            rows.append(row)
        out += md_table(headers, rows) + [""]
        best = winner(group)
        if best is None:
            out += ["Winner: none (no passed backend).", ""]
        else:
            per_dev = [f"{dev}: {w.label} ({fmt(w.time)} ms)" for dev in devices_present(groups)
                       for w in [winner(group, dev)] if w]
            out += [f"Winner: **{best.label}** ({best.device}), {figure_name(best.figure)} "
                    f"{fmt(best.time)} ms. Per device: {', '.join(per_dev)}.", ""]
    return out


def compile_section(groups):
    rows = []
    for key, group in groups.items():
        for o in group:
            if o.time is None or o.compile is None:
                continue
            ref = reference_row(group, o)
            own_calls = o.compile / o.time if o.time > 0 else None
            if ref is None:
                ref_name, ref_time, payback = "n/a", None, "n/a (no passed reference)"
            elif ref is o:
                ref_name, ref_time, payback = ref.label, ref.time, "(reference)"
            else:
                mine, theirs = comparable(o, ref)
                ref_name, ref_time = ref.label, theirs
                if mine is not None and theirs is not None and mine < theirs:
                    payback = fmt(o.compile / (theirs - mine))
                else:
                    payback = "never"
            rows.append([cell_label(key, group), o.label, fmt(o.compile), fmt(o.time),
                         fmt(own_calls), ref_name, fmt(ref_time), payback])
    out = ["## Compile overhead against steady-state time", "",
           "compile / own = `compile_time_ms` / own primary time (how many calls the compile "
           "costs). Calls to pay back = `compile_time_ms` / (reference time - own time) when the "
           "backend is faster than LibTorch on its device, else never.", ""]
    if not rows:
        return out + ["No passed case with a compile time.", ""]
    return out + md_table(["problem", "backend", "compile ms", "own ms", "compile / own",
                           "reference", "reference ms", "calls to pay back"], rows) + [""]


def ratio_section(groups):
    out = ["## Ratios against cuDNN", "",
           f"Per dtype: a backend's GPU median / `{RATIO_BASE}`'s GPU median on the same problem "
           "and layout (below 1: faster than cuDNN). A cell names the status when the backend did "
           "not pass; n/a when it or cuDNN has no GPU time. Geometric mean over the cells that "
           "have a ratio.", ""]
    in_ratios = {RATIO_BASE} | {b for _, b in RATIO_BACKENDS + RATIO_BACKENDS_IF_PRESENT}
    cases = [o for group in groups.values() for o in group if o.backend in in_ratios]
    if cases and not any(passed(o.r) for o in cases if o.backend == RATIO_BASE):
        # cuDNN never ran here (a CPU run): no ratio, one line per backend instead of a table
        # of skipped cells.
        return out[:1] + [f"No ratio: `{RATIO_BASE}` has no passed case in these files.", ""] + \
            not_run_lines([(o.backend, o.status, o.r.get("reason")) for o in cases
                           if o.status in NOT_RUN]) + [""]
    out += gpu_models_note([o.r for group in groups.values() for o in group])
    by_dtype = {}
    for key, group in groups.items():
        by_dtype.setdefault(key[2], []).append((key, group))
    dtypes = [d for d in DTYPE_ORDER if d in by_dtype] + sorted(d for d in by_dtype
                                                                 if d not in DTYPE_ORDER)
    held = {o.backend for group in groups.values() for o in group}
    compared = RATIO_BACKENDS + [(t, b) for t, b in RATIO_BACKENDS_IF_PRESENT if b in held]
    any_table = False
    for dt in dtypes:
        rows, ratios = [], {title: [] for title, _ in compared}
        for key, group in by_dtype[dt]:
            base = [o for o in group if o.backend == RATIO_BASE]
            base_gpu = median(base[0].r, "gpu_time_ms") if base and passed(base[0].r) else None
            present = [o for o in group if o.backend in dict((b, t) for t, b in compared)]
            if not base and not present:
                continue
            row = [cell_label(key, group), key[1]]
            for title, backend in compared:
                mine = [o for o in group if o.backend == backend]
                if not mine:
                    row.append("-")
                    continue
                m = mine[0]
                gpu = median(m.r, "gpu_time_ms") if passed(m.r) else None
                if not passed(m.r):
                    row.append(m.status)
                elif gpu is None or base_gpu is None or base_gpu <= 0:
                    row.append("n/a")
                else:
                    ratios[title].append(gpu / base_gpu)
                    row.append(fmt(gpu / base_gpu))
            rows.append(row)
        if not rows:
            continue
        any_table = True
        geo = ["geometric mean", ""]
        for title, _ in compared:
            v = ratios[title]
            geo.append(f"{fmt(math.exp(sum(map(math.log, v)) / len(v)))} (of {len(v)})" if v
                       else "n/a")
        # A backend that could not run on any problem of this dtype: a line, not a column.
        gone = [j for j in range(len(compared))
                if all(row[2 + j] in NOT_RUN + ("-",) for row in rows)
                and any(row[2 + j] in NOT_RUN for row in rows)]
        keep = [j for j in range(len(compared)) if j not in gone]
        lines = not_run_lines([(o.backend, o.status, o.r.get("reason"))
                               for key, group in by_dtype[dt] for o in group
                               if o.backend in {compared[j][1] for j in gone}
                               and o.status in NOT_RUN])
        table = [row[:2] + [row[2 + j] for j in keep] for row in rows + [geo]]
        out += [f"### {dt}", ""] + md_table(["problem", "descriptor"] +
                                            [compared[j][0] for j in keep], table) + [""]
        if lines:
            out += ["Not run on any of these problems:", ""] + lines + [""]
    if not any_table:
        out += ["No case of cuDNN or of the compared backends.", ""]
    return out


def roofline_section(bandwidth, peaks, gpu, plotted):
    out = ["## Roofline", ""]
    if not gpu:
        out.append("No GPU in `system`: no ceilings; GPU points, if any, are plotted without them.")
    elif not bandwidth and not peaks:
        out.append(f"`system.gpus[0]` ({gpu.get('name', 'unnamed')}) gives no peak bandwidth or "
                   "peak FLOP/s: the points are plotted without ceilings.")
    else:
        parts = []
        if bandwidth:
            parts.append(f"peak memory bandwidth {fmt(bandwidth[0])} GB/s (`{bandwidth[1]}`)")
        else:
            parts.append("no peak bandwidth recorded (no memory roof)")
        for dt, (v, field) in peaks.items():
            parts.append(f"{dt} peak {fmt(v)} TFLOP/s (`{field}`)")
        if not peaks:
            parts.append("no peak FLOP/s recorded (no compute roof)")
        out.append(f"Ceilings of `system.gpus[0]` ({gpu.get('name', 'unnamed')}): "
                   + "; ".join(parts) + ".")
    out.append("Points: achieved FLOP/s = `flop` / GPU median against arithmetic intensity = "
               "`flop` / `bytes` (fewest bytes one call moves), passed GPU backends only."
               + ("" if plotted else " No GPU point to plot."))
    return out + [""]


def build_report(inputs, plot_note, plots, bandwidth, peaks, gpu, roof_points):
    groups = group_problems(inputs)
    n_results = sum(len(d["results"]) for d in inputs)
    n_passed = sum(1 for d in inputs for r in d["results"] if passed(r))
    out = ["# myconv results report", "",
           f"Made by `{command_line()}` from:", ""]
    for i, d in enumerate(inputs):
        tag = f" (#{i + 1})" if len(inputs) > 1 else ""
        read_as = "" if d["schema_version"] == SCHEMA_VERSION else f", read as {SCHEMA_VERSION}"
        out.append(f"- `{d['path']}`{tag}: schema_version {d['schema_version']}{read_as}, "
                   f"{len(d['results'])} results")
    out += ["", "Every number below is read from these files or computed from their fields by the "
            "formula given beside it (rounded to 4 significant digits).", ""]
    statuses = {}
    for d in inputs:
        for r in d["results"]:
            statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    out.append(f"{n_results} results, {len(groups)} problems (problem x dtype x layout); status: "
               + (", ".join(f"{k} {v}" for k, v in statuses.items()) or "none") + ".")
    out.append("")
    out += attention_section(groups)
    if n_passed == 0:
        out += ["## No passed case", "",
                "No result in the input has status `passed`: there are no times to compare, no "
                "winners and no plots.", ""]
    out += ["## System and versions", ""]
    for d in inputs:
        out += system_section(d)
    if n_passed:
        out += winners_section(groups)
        out += problems_section(groups, bandwidth, peaks)
        out += compile_section(groups)
        out += ratio_section(groups)
        out += roofline_section(bandwidth, peaks, gpu, roof_points > 0)
    out += time_split_section(inputs)
    out += trust_section(inputs)
    out += plots_markdown(plot_note, plots)
    return "\n".join(out).rstrip() + "\n"


def report_main(inputs, paths, output_dir):
    """Writes report.md and plots/ for the loaded inputs (all validated before this is called)."""
    out_dir, plot_dir = output_folders(paths, output_dir)
    gpu = next((g for g in (gpu_info(d["system"]) for d in inputs) if g), None)
    bandwidth, peaks = ceilings(gpu)
    note = plot_note(any(passed(r) for d in inputs for r in d["results"]))
    plots, points = make_plots(inputs, plot_dir, bandwidth, peaks) if note is None else ([], 0)
    remove_stale_plots(plot_dir, PLOT_FILES, [p for p, _ in plots])
    report = build_report(inputs, note, plots, bandwidth, peaks, gpu, points)
    write_report(out_dir, report, plot_dir, len(plots))
