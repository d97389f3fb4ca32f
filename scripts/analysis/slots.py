"""Where a run's time went: each record's `slot_ms` (results/README.md), summed per backend and
for the run, and the share of the time spent measuring (sampling, and with compile and first
run). A section of every suite's report; empty for files without slot times."""

from analysis.common import md_table

# The slot's parts in the order a case meets them (core/driver.hpp finish_case, core/runner.cpp),
# then the runner's share and the time of cases that left no record (a crash, a hang).
PARTS = (("start", ("process_start", "session", "device_context")),
         ("reference", ("reference",)), ("prepare", ("prepare",)), ("compile", ("compile",)),
         ("first run", ("first_run",)), ("sampling", ("sampling",)), ("check", ("check",)),
         ("after sampling", ("after_sampling",)), ("writing, other", ("writing", "other")),
         ("runner", ("runner",)), ("lost", ("lost",)))
MEASURING = ("compile", "first_run", "sampling")


def num(x):
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 0.0


def wall_ms(slot):
    """The slot's wall time: the runner's view where it recorded one, else the program's total."""
    return num(slot.get("wall")) or num(slot.get("total"))


def sums(records):
    """(cases, wall ms, {part: ms}, measuring ms) over records with a slot."""
    n, wall, parts, measuring = 0, 0.0, {label: 0.0 for label, _ in PARTS}, 0.0
    for r in records:
        slot = r.get("slot_ms")
        if not isinstance(slot, dict):
            continue
        n += 1
        wall += wall_ms(slot)
        for label, keys in PARTS:
            parts[label] += sum(num(slot.get(k)) for k in keys)
        measuring += sum(num(slot.get(k)) for k in MEASURING)
    return n, wall, parts, measuring


def pct(part, whole):
    return f"{100.0 * part / whole:.1f}%" if whole > 0 else "n/a"


def time_split_section(inputs):
    out = []
    for d in inputs:
        records = [r for r in d["results"] if isinstance(r.get("slot_ms"), dict)]
        if not records:
            continue
        n, wall, parts, measuring = sums(records)
        sampling = parts["sampling"]
        out += ["## Where the time went", "",
                f"`{d['path']}`: the wall time of each case's slot (from the end of the case "
                "before it in its process, or from the process start, to its record written; "
                "`slot_ms` in results/README.md), split into its parts, per backend and for the "
                "run. start = process start and library load, set-up, device context (the first "
                "case of each process); reference = the problem's inputs and float64 reference "
                "(its first case); runner = the runner's share (process creation, polling, "
                "writing the run's files); lost = cases that left no record (a crash, a hang "
                "until the limit).", ""]
        rows = []
        backends = list(dict.fromkeys(r["backend"] for r in records))
        for b in backends + [None]:
            sel = records if b is None else [r for r in records if r["backend"] == b]
            bn, bwall, bparts, bmeas = sums(sel)
            rows.append(["**run**" if b is None else b, bn, f"{bwall / 1e3:.1f}"]
                        + [pct(bparts[label], bwall) for label, _ in PARTS]
                        + [pct(bmeas, bwall)])
        out += md_table(["backend", "cases", "wall s"] + [label for label, _ in PARTS]
                        + ["measuring"], rows) + [""]
        line = (f"Measuring (compile + first run + sampling): {pct(measuring, wall)} of the "
                f"cases' wall time ({measuring / 1e3:.1f} of {wall / 1e3:.1f} s); sampling "
                f"alone {pct(sampling, wall)}.")
        run = d.get("run") or {}
        run_wall = num(run.get("wall_s"))
        workers = [w for w in run.get("workers") or [] if isinstance(w, dict)]
        if run_wall > 0:
            lanes = max(1, len(workers))
            line += (f" The run took {run_wall:.1f} s of wall time"
                     + (f" on {lanes} workers in parallel ({lanes * run_wall:.1f} worker-s)"
                        if lanes > 1 else "")
                     + f": measuring is {pct(measuring / 1e3, lanes * run_wall)} of it.")
        out += [line, ""]
    return out
