"""--compare: two result files case by case (any suite; a case is suite, backend, problem, dtype,
layout), as a Markdown table of faster / slower / same.
"""

import sys

from analysis.common import (case_key, command_line, fmt, figure_name, load, md_table, median,
                             number, passed, stats, write_atomic)

COMPARE_RULE = (
    "A case is `slower` when new/old median > 1 + threshold AND the new p10 lies above the old "
    "p90 (the p10-p90 intervals do not overlap); `faster` when new/old < 1/(1 + threshold) AND "
    "the new p90 lies below the old p10; else `same`. The time compared is the GPU median when "
    "both records have one, else the total median, with that figure's p10/p90; where a record "
    "has no p10/p90 its interval is its median alone (marked *). Cases not timed in both files "
    "are `same` when the status did not change, else `status changed`.")


def interval(r, figure):
    s = stats(r, figure)
    lo, hi = number(s.get("p10")), number(s.get("p90"))
    if lo is None or hi is None:
        m = number(s.get("median"))
        return (m, m), True
    return (lo, hi), False


def compare_case(old, new, threshold):
    """(old ms, new ms, ratio, old interval, new interval, verdict, note)."""
    if old is None or new is None:
        return None, None, None, None, None, "only in " + ("new" if old is None else "old"), ""
    if not (passed(old) and passed(new)):
        if old["status"] == new["status"]:
            return None, None, None, None, None, "same", f"not timed: {old['status']} in both"
        return (None, None, None, None, None, "status changed",
                f"{old['status']} -> {new['status']}")
    figure = "gpu_time_ms" if (median(old, "gpu_time_ms") is not None
                               and median(new, "gpu_time_ms") is not None) else "total_time_ms"
    a, b = median(old, figure), median(new, figure)
    if a is None or b is None or a <= 0:
        return a, b, None, None, None, "same", "no common time"
    (olo, ohi), o_star = interval(old, figure)
    (nlo, nhi), n_star = interval(new, figure)
    ratio = b / a
    verdict = "same"
    if ratio > 1 + threshold and nlo > ohi:
        verdict = "slower"
    elif ratio < 1 / (1 + threshold) and nhi < olo:
        verdict = "faster"
    note = figure_name(figure) + (" *" if o_star or n_star else "")
    return a, b, ratio, (olo, ohi), (nlo, nhi), verdict, note


def compare_main(old_path, new_path, threshold, output):
    old_doc, new_doc = load(old_path), load(new_path)

    def index(doc):
        table, dup = {}, 0
        for r in doc["results"]:
            k = case_key(r)
            if k in table:
                dup += 1
                continue
            table[k] = r
        return table, dup

    old, old_dup = index(old_doc)
    new, new_dup = index(new_doc)
    keys = list(old) + [k for k in new if k not in old]
    rows, counts = [], {}
    for k in keys:
        a, b, ratio, oi, ni, verdict, note = compare_case(old.get(k), new.get(k), threshold)
        counts[verdict] = counts.get(verdict, 0) + 1
        span = (lambda iv: "n/a" if iv is None else f"{fmt(iv[0])}-{fmt(iv[1])}")
        rows.append([k[1], k[2], k[3], k[4], fmt(a), fmt(b), fmt(ratio, 3), span(oi), span(ni),
                     f"**{verdict}**" if verdict in ("slower", "faster") else verdict, note])
    out = ["# myconv comparison", "", f"Made by `{command_line()}`.", "",
           f"- old: `{old_path}` ({len(old_doc['results'])} results)",
           f"- new: `{new_path}` ({len(new_doc['results'])} results)", "",
           f"Rule (threshold {threshold:g}): {COMPARE_RULE}", ""]
    if old_dup or new_dup:
        out += [f"Repeated cases (same suite, backend, problem, dtype, layout) are compared by "
                f"their first record: {old_dup} repeat(s) in old, {new_dup} in new.", ""]
    out += ["Summary: " + (", ".join(f"{v} {k}" for k, v in counts.items()) or "no cases") + ".",
            ""]
    if any(k[0] != "conv" for k in keys):
        for row, k in zip(rows, keys):
            row[0] = f"{k[0]}/{row[0]}"
    out += md_table(["backend", "problem", "dtype", "layout", "old ms", "new ms", "new/old",
                     "old p10-p90", "new p10-p90", "verdict", "detail"], rows)
    text = "\n".join(out) + "\n"
    if output:
        write_atomic(output, text)
    sys.stdout.write(text)
