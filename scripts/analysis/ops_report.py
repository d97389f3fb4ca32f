"""The op suite's report (myops results, suite "ops"): report.md with the system and its measured
limits, a summary per backend (success rate, speed-up against PyTorch, cases per band), a
breakdown per category, a detailed table per category (with the limit of every case below
"good"), the best and worst cases per backend, suggestions and the issue's targets judged by
rules from the numbers, the cases that did not pass with their reasons, and notes where the
`metrics` myops wrote disagree with the figures recomputed here; plots/ with efficiency against
size per op, a speed-up heatmap per backend and a matmul roofline. Every figure is recomputed
from the records' raw fields (analysis/ops_model.py says how).
"""

import os

from results.results_schema import SCHEMA_VERSION

from analysis import ops_plots
from analysis.common import (command_line, correctness, fmt, gpu_info, gpu_models_note, md_table,
                             number, output_folders, passed, plot_note, plots_markdown, shorten,
                             system_section, write_atomic, write_report, trust_section, NOT_RUN,
                             not_run_lines)
from analysis.slots import time_split_section
from analysis.ops_model import (BAND_ORDER, BANDWIDTH_BOUND, CATEGORIES, COMPUTE_BOUND,
                                LAUNCH_IDEAL_MS, LAUNCH_MS, OP_ORDER, SIZE_CLASSES, SMALL_BYTES,
                                Limits, build_rows, geomean, metric_notes, middle)
from analysis.ops_rules import evaluate_targets, l2_of, pct, suggestions

SUMMARY = ("report.md holds the system and its measured limits (copy bandwidth per device, "
           "matmul ceiling per dtype), a summary per backend, a breakdown per category, a "
           "detailed table per category, best and worst cases, suggestions, the cases that did "
           "not pass, the issue's targets and notes on `metrics`; plots/ holds "
           + ", ".join(ops_plots.PLOT_NAMES) + ".")
NOT_PASSED = ("incorrect", "failed", "timeout", "unsupported", "skipped")


def count(n):
    """An element count in K/M/G (powers of 1000), 3 significant digits."""
    if n is None:
        return "n/a"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return str(n)


def fmt_ratio(x):
    return "n/a" if x is None else f"{x:.3g}x"


def backends_in_order(rows):
    return list(dict.fromkeys(o.label for o in rows))


def categories_in(rows):
    present = {o.category for o in rows}
    return [c for c in CATEGORIES if c in present] + sorted(present - set(CATEGORIES))


# ---- sections ------------------------------------------------------------------------------

def limits_section(inputs, limits):
    out = ["## System and measured limits", "",
           "Efficiencies are taken against these measured figures (`system.bandwidth`, "
           "`system.matmul_ceiling`), never a datasheet's.", ""]
    rows = []
    for e in ([limits.cuda] if limits.cuda else []):
        meas, theo = number(e.get("measured_copy_gbs")), number(e.get("theoretical_gbs"))
        rows.append([f"cuda {e.get('index', '')}".strip(), e.get("name", ""), fmt(meas),
                     fmt(theo), pct(meas / theo) if meas and theo else "n/a",
                     shorten(e.get("method", ""), 100)])
    if limits.cpu:
        c = limits.cpu
        cpu_name = next((d["system"].get("cpu_model") for d in inputs
                         if d["system"].get("cpu_model")), "")
        rows.append(["cpu", cpu_name, fmt(number(c.get("measured_copy_gbs"))), "n/a", "n/a",
                     shorten(f"{c.get('method', '')} ({c.get('threads', '?')} threads)", 100)])
    if rows:
        out += md_table(["device", "name", "measured copy GB/s", "theoretical GB/s",
                         "measured / theoretical", "method"], rows)
    for dev, entry, why in (("cuda", limits.cuda, limits.cuda_why),
                            ("cpu", limits.cpu, limits.cpu_why)):
        if entry is None and why:
            out += ["", f"The {dev} copy bandwidth was not measured: {why}"]
    if limits.ceiling:
        mc = limits.ceiling
        gpu = next((g for g in (gpu_info(d["system"]) for d in inputs) if g), None) or {}
        sheet = gpu.get("theoretical_peak_tflops") if isinstance(
            gpu.get("theoretical_peak_tflops"), dict) else {}
        rows = [[dt, fmt(number(v)), fmt(number(sheet.get(dt))),
                 pct(number(v) / number(sheet[dt])) if number(v) and number(sheet.get(dt))
                 else "n/a"] for dt, v in mc["tflops"].items()]
        out += ["", f"Matmul ceiling (`system.matmul_ceiling`: {mc.get('method', 'method n/a')}):",
                ""] + md_table(["dtype", "measured TFLOP/s", "datasheet TFLOP/s",
                                "measured / datasheet"], rows)
        for dt, why in (mc.get("failed") or {}).items():
            out.append(f"- {dt}: not measured: {why}")
    elif limits.ceiling_why:
        out += ["", f"Matmul ceiling not measured: {limits.ceiling_why}"]
    elif not rows:
        out += ["No measured limits in these files: no efficiencies."]
    out += ["", "Machine and versions (`system`):", ""]
    for d in inputs:
        out += system_section(d)
    return out


def summary_section(rows):
    out = ["## Summary per backend", "",
           "Ratio = PyTorch's primary time / the backend's (GPU median when both have one, else "
           "total medians) on the same device, problem and timing mode (real, or pure: graph "
           "and back-to-back alike): above 1 the backend is faster. Bands (Genesis): >= 0.9 "
           "excellent, 0.7-0.9 good, 0.5-0.7 fair, 0.2-0.5 poor, < 0.2 critical. Success rate = "
           "passed / cases attempted (all but skipped).", ""]
    out += gpu_models_note([o.r for o in rows])
    table = []
    for label in backends_in_order(rows):
        mine = [o for o in rows if o.label == label]
        n_pass = sum(1 for o in mine if o.status == "passed")
        attempted = sum(1 for o in mine if o.status != "skipped")
        other = {}
        for o in mine:
            if o.status != "passed":
                other[o.status] = other.get(o.status, 0) + 1
        ratios = [o.ratio for o in mine if o.ratio is not None and o.band]
        if mine[0].is_reference:
            stats = ["(reference)"] * 3 + ["-"] * len(BAND_ORDER)
        else:
            stats = [fmt_ratio(sum(ratios) / len(ratios) if ratios else None),
                     fmt_ratio(middle(ratios)), fmt_ratio(geomean(ratios))] + [
                str(sum(1 for o in mine if o.band == b)) for b in BAND_ORDER]
        table.append([label, mine[0].device, str(len(mine)), str(n_pass),
                      ", ".join(f"{v} {k}" for k, v in other.items()) or "-",
                      pct(n_pass / attempted) if attempted else "n/a"] + stats)
    return out + md_table(["backend", "device", "cases", "passed", "not passed", "success rate",
                           "mean ratio", "median ratio", "geomean ratio"] + BAND_ORDER,
                          table) + [""]


def category_section(rows):
    out = ["## Per category", "",
           "Medians over the passed cases of each category and backend; bandwidth efficiency = "
           "GB/s (`bytes` / primary time) / the measured copy bandwidth of the backend's device; "
           "matmul also against the measured matmul ceiling of its dtype.", ""]
    table = []
    for cat in categories_in(rows):
        for label in backends_in_order(rows):
            mine = [o for o in rows if o.category == cat and o.label == label]
            timed = [o for o in mine if o.time is not None]
            if not mine:
                continue
            ref = mine[0].is_reference
            table.append([cat, label, f"{len(timed)}/{len(mine)}",
                          "(reference)" if ref else fmt_ratio(middle([o.ratio for o in timed])),
                          "(reference)" if ref else fmt_ratio(geomean([o.ratio for o in timed])),
                          pct(middle([o.eff for o in timed])),
                          pct(middle([o.compute_eff for o in timed])) if cat == "matmul"
                          else "-"])
    return out + md_table(["category", "backend", "passed/cases", "median ratio",
                           "geomean ratio", "median bandwidth efficiency",
                           "median % of matmul ceiling"], table) + [""]


def rules_text():
    return (f"Limit of a case below \"good\", by these rules in order: **compute-bound**: a matmul "
            f"at >= {COMPUTE_BOUND:.0%} of the measured ceiling of its dtype; "
            f"**bandwidth-bound**: >= {BANDWIDTH_BOUND:.0%} of the measured copy bandwidth; "
            f"**launch-bound**: a call under {LAUNCH_MS * 1e3:g} us, or bytes that take under "
            f"{LAUNCH_IDEAL_MS * 1e3:g} us at the measured copy bandwidth (under "
            f"{SMALL_BYTES >> 20} MiB where none was measured); else **inefficient kernel**.")


def detail_section(rows):
    show_timing = len({o.timing for o in rows}) > 1
    out = ["## Details per category", "",
           "ms = primary time (GPU median, else total median); PyTorch ms likewise, of the "
           "reference on the same device; ratio = PyTorch ms / ms; GB/s = `bytes` / ms; "
           "efficiency = GB/s / the measured copy bandwidth. Elements: input elements (matmul: "
           "b*m*n); the heatmaps' size classes by elements: " + ", ".join(
               f"{n} up to {top:,}" if top != float("inf") else f"{n} above"
               for n, top in SIZE_CLASSES) + ". " + rules_text(), ""]
    for cat in categories_in(rows):
        mine = [o for o in rows if o.category == cat]
        matmul = cat == "matmul"
        headers = (["problem", "backend", "shape", "elements", "dtype"] +
                   (["timing"] if show_timing else []) +
                   ["PyTorch ms", "ms", "ratio", "GB/s", "efficiency"] +
                   (["TFLOP/s", "% of ceiling"] if matmul else []) + ["band", "limit"])
        table = []
        for o in sorted(mine, key=lambda o: (OP_ORDER.index(o.op) if o.op in OP_ORDER else 99,
                                              o.elements or 0, o.problem, o.timing)):
            ratio = ("1x (reference)" if o.ref is o else fmt_ratio(o.ratio))
            ref_ms = o.ref.time if o.ref is not None else None
            band = o.band or ("-" if o.status == "passed" else o.status)
            row = [o.problem, o.label, o.shape, count(o.elements), o.dtype] + (
                [o.timing] if show_timing else []) + [
                fmt(ref_ms), fmt(o.time), ratio if o.time is not None else "n/a", fmt(o.gbs),
                pct(o.eff)] + ([fmt(o.gflops / 1e3 if o.gflops else None), pct(o.compute_eff)]
                               if matmul else []) + [band, o.limit or ""]
            table.append(row)
        out += [f"### {cat}", ""] + md_table(headers, table) + [""]
    return out


def best_worst_section(rows):
    out = ["## Best and worst per backend", "",
           "The five highest and the five lowest ratios against PyTorch of each backend (with "
           "fewer than ten, each case once).", ""]
    any_table = False
    for label in backends_in_order(rows):
        scored = [o for o in rows if o.label == label and o.band]
        if not scored:
            continue
        any_table = True
        scored.sort(key=lambda o: -o.ratio)
        n_best = min(5, (len(scored) + 1) // 2)  # fewer than 10 cases: no case listed twice
        n_worst = min(5, len(scored) - n_best)
        worst = list(reversed(scored[len(scored) - n_worst:])) if n_worst else []
        table = []
        for which, part in (("best", scored[:n_best]), ("worst", worst)):
            for o in part:
                table.append([which, o.problem, o.dtype, fmt_ratio(o.ratio), o.band, pct(o.eff),
                              o.limit or ""])
        out += [f"### {label}", ""] + md_table(["", "problem", "dtype", "ratio", "band",
                                                "efficiency", "limit"], table) + [""]
    return out + ([] if any_table else ["No backend has a ratio against PyTorch.", ""])


def failures_section(rows):
    out = ["## Cases that did not pass", ""]
    table = []
    not_run = [(o.label, o.status, o.r.get("reason")) for o in rows if o.status in NOT_RUN]
    if not_run:
        out += ["Not run: skipped or unsupported (one line per backend and reason):", ""]
        out += not_run_lines(not_run) + [""]
    for o in rows:
        if o.status == "passed" or o.status in NOT_RUN:
            continue
        c = correctness(o.r)
        detail = []
        if o.status == "incorrect" and c:
            detail.append(f"rel L2 err {fmt(number(c.get('rel_l2_err')))}, max abs err "
                          f"{fmt(number(c.get('max_abs_err')))}, mismatches "
                          f"{c.get('mismatches', 'n/a')}/{c.get('elements', 'n/a')}")
        if o.r.get("reason"):
            detail.append(shorten(o.r["reason"]))
        table.append([o.label, o.problem, o.dtype, o.status, "; ".join(detail) or "no reason"])
    if not table:
        return out + (["Every case that ran passed." if not_run else "None: every case passed.",
                       ""])
    return out + md_table(["backend", "problem", "dtype", "status", "reason"], table) + [""]


def targets_section(rows, inputs):
    table, absent = evaluate_targets(rows, l2_of(inputs))
    out = ["## Targets", "",
           "The issue's performance targets for our kernels, on the cases of this data that they "
           "cover (skipped cases left out). A target is met when every case it covers reaches "
           "it; short by = how far its worst case is from the bar; measured limit = where that "
           "worst case stands against the measured limits, beside PyTorch (cuBLASLt for matmul) "
           "on the same case.", ""]
    if table:
        out += md_table(["target", "cases", "worst", "bar", "result", "short by / notes",
                         "measured limit"],
                        table) + [""]
    else:
        out += ["No case of these data is covered by a target.", ""]
    if absent:
        out += ["Not in these data: " + "; ".join(absent) + ".", ""]
    return out


def notes_section(rows, notes):
    out = ["## Notes", ""]
    bare = sum(1 for o in rows if o.time is not None and not isinstance(o.r.get("metrics"), dict))
    if bare:
        out.append(f"- {bare} passed case(s) carry no `metrics`; their figures are computed here "
                   "only.")
    out += [f"- {n}" for n in notes]
    if not notes:
        out.append("- The `metrics` myops wrote agree with the recomputed figures (within 1%) "
                   "wherever both exist.")
    return out + [""]


# ---- the report ----------------------------------------------------------------------------

def build_report(inputs, rows, limits, note, plots):
    notes = metric_notes(rows)
    out = ["# myops results report", "", f"Made by `{command_line()}` from:", ""]
    for i, d in enumerate(inputs):
        tag = f" (#{i + 1})" if len(inputs) > 1 else ""
        read_as = "" if d["schema_version"] == SCHEMA_VERSION else f", read as {SCHEMA_VERSION}"
        out.append(f"- `{d['path']}`{tag}: schema_version {d['schema_version']}{read_as}, "
                   f"{len(d['results'])} results")
    statuses = {}
    for o in rows:
        statuses[o.status] = statuses.get(o.status, 0) + 1
    out += ["", "Every number below is read from these files or computed from their raw fields "
            "by the formula given beside it (4 significant digits; ratios 3).", "",
            f"{len(rows)} results, {len({o.key() for o in rows})} problems "
            "(descriptor with dtype x timing mode); status: "
            + (", ".join(f"{k} {v}" for k, v in statuses.items()) or "none") + ".", ""]
    out += limits_section(inputs, limits)
    if any(o.time is not None for o in rows):
        out += summary_section(rows)
        out += category_section(rows)
        out += detail_section(rows)
        out += best_worst_section(rows)
    else:
        out += ["## No passed case", "", "No result has status `passed`: no times, ratios or "
                "efficiencies.", ""]
    out += ["## Suggestions", ""] + (suggestions(rows, notes) or [
        "No rule fired: no large case below 60% of the copy bandwidth, no launch-bound case "
        "below PyTorch, no matmul far from its ceiling, no dtype gap, no incorrect case."]) + [""]
    out += failures_section(rows)
    out += targets_section(rows, inputs)
    out += notes_section(rows, notes)
    out += time_split_section(inputs)
    out += trust_section(inputs)
    out += plots_markdown(note, plots)
    return "\n".join(out).rstrip() + "\n"


def report_main(inputs, paths, output_dir):
    """Writes report.md and plots/ for the loaded inputs (all validated before this is called)."""
    out_dir, plot_dir = output_folders(paths, output_dir)
    limits = Limits(inputs)
    rows = build_rows(inputs, limits)
    note = plot_note(any(passed(o.r) for o in rows))
    plots = ops_plots.make_plots(rows, limits, plot_dir) if note is None else []
    ops_plots.remove_stale(plot_dir, [name for name, _ in plots])
    report = build_report(inputs, rows, limits, note, plots)
    write_report(out_dir, report, plot_dir, len(plots))
