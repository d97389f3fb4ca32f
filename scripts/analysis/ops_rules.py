"""The op report's judgements, made by rules from the rows (analysis/ops_model.py): the issue's
performance targets, each met or missed and by how much, and suggestions, each fired by a rule
on the numbers and naming them (never a canned line that holds whatever the data say).
"""

from analysis.common import correctness, fmt, number, params
from analysis.ops_model import (BANDWIDTH_BOUND, BELOW_GOOD, COMPUTE_BOUND, LAUNCH_IDEAL_MS,
                                LAUNCH_MS, OWN, VENDOR_MATMUL, geomean, ratio_against)

TARGET_CATEGORIES = ["element", "activation", "reduction", "normalization", "memory"]
LOW_PRECISION_GAP = 0.8  # low-precision geomean ratio below 0.8x the fp32 one: a dtype gap


def pct(x):
    return "n/a" if x is None else f"{100 * x:.3g}%"


def case_name(o):
    return f"`{o.problem}`" + (f" ({o.timing})" if o.timing else "")


# ---- targets -------------------------------------------------------------------------------

class Target:
    """One target: which own_cuda cases it covers, the figure it reads and the bar it sets."""

    def __init__(self, title, scope, figure, bar, unit):
        self.title, self.scope, self.figure, self.bar, self.unit = title, scope, figure, bar, unit


def shape_is(o, want):
    return params(o.r).get("shape") == want


def matmul_4096(o):
    p = params(o.r)
    return o.is_matmul and p.get("b", 1) == 1 and all(p.get(x) == 4096 for x in "mnk")


def targets():
    out = []
    for cat in TARGET_CATEGORIES:
        for dt in ("fp32", "bf16"):
            out.append(Target(
                f"{OWN} >= 1.0x PyTorch on {cat} ops at >= 4M elements, {dt}",
                lambda o, cat=cat, dt=dt: o.category == cat and o.dtype == dt and (
                    o.elements or 0) >= 4_000_000, "ratio", 1.0, "x"))
    for cat in ("element", "activation"):
        out.append(Target(
            f"{OWN} {cat} ops at >= 16M elements reach >= 90% of the measured copy bandwidth",
            lambda o, cat=cat: o.category == cat and (o.elements or 0) >= 16_000_000,
            "efficiency", 0.9, "%"))
    out.append(Target(f"{OWN} transpose 8192x8192 fp32 reaches >= 80% of the measured copy "
                      "bandwidth",
                      lambda o: o.op == "transpose" and shape_is(o, [8192, 8192]) and
                      o.dtype == "fp32", "efficiency", 0.8, "%"))
    out.append(Target(f"{OWN} reductions at 4x512x896 no slower than PyTorch (>= 1.0x)",
                      lambda o: o.category == "reduction" and shape_is(o, [4, 512, 896]),
                      "ratio", 1.0, "x"))
    out.append(Target(f"{OWN} reductions at 64x4096x4096 reach >= 90% of the measured copy "
                      "bandwidth",
                      lambda o: o.category == "reduction" and shape_is(o, [64, 4096, 4096]),
                      "efficiency", 0.9, "%"))
    for dt, bar in (("bf16", 0.7), ("fp16", 0.7), ("fp32", 0.8)):
        out.append(Target(f"{OWN} matmul 4096x4096x4096 {dt} >= {bar}x {VENDOR_MATMUL}",
                          lambda o, dt=dt: matmul_4096(o) and o.dtype == dt, "vendor", bar, "x"))
    return out


def vendor_ratio(o, rows):
    """cuBLASLt time / own time on the same problem and timing mode (same file first)."""
    cands = [v for v in rows if v.backend == VENDOR_MATMUL and v.key() == o.key()
             and v.time is not None]
    same = [v for v in cands if v.source == o.source]
    return ratio_against(o, (same or cands or [None])[0])


def measured_limit(t, o, rows, l2_bytes):
    """What the data say limits a missed target's worst case o: where it sits against the
    measured limits, beside what PyTorch (or cuBLASLt, for matmul) reaches on the same case."""
    def eff_of(row):
        return pct(row.eff) if row is not None and row.eff is not None else "n/a"
    if t.figure == "vendor" or o.is_matmul:
        vendor = [v for v in rows if v.backend == VENDOR_MATMUL and v.key() == o.key()
                  and v.compute_eff is not None]
        theirs = pct(vendor[0].compute_eff) if vendor else "n/a"
        return (f"compute: {pct(o.compute_eff)} of the measured {o.dtype} matmul ceiling, "
                f"{VENDOR_MATMUL} {theirs}")
    ref = o.ref if o.ref is not None and o.ref is not o else None
    text = f"bandwidth: {eff_of(o)} of the measured copy bandwidth, PyTorch {eff_of(ref)}"
    if o.bytes and l2_bytes and o.bytes <= l2_bytes:
        text += (f"; its {o.bytes / 2**20:.3g} MiB fit in the {l2_bytes / 2**20:.3g} MiB L2, so "
                 "replays run from the cache (efficiency past 100% is the L2's)")
    elif ref is not None and ref.eff is not None and t.figure == "efficiency" and ref.eff < t.bar:
        text += ": PyTorch misses this bar too"
    elif ref is not None and ref.eff is not None and o.eff is not None:
        text += f": {100 * (ref.eff - o.eff):.2g} points of bandwidth between them"
    return text


def l2_of(inputs):
    """The L2 size of the (first) GPU the data name, or None."""
    for doc in inputs:
        for g in (doc.get("system", {}).get("gpus") or []):
            if isinstance(g, dict) and isinstance(g.get("l2_cache_bytes"), (int, float)):
                return g["l2_cache_bytes"]
    return None


def evaluate_targets(rows, l2_bytes=None):
    """(table rows, titles of targets the data have no case of)."""
    table, absent = [], []
    for t in targets():
        # A skipped case was not attempted (no GPU, not built): it measures nothing.
        scoped = [o for o in rows if o.backend == OWN and o.status != "skipped" and t.scope(o)]
        if not scoped:
            absent.append(t.title)
            continue
        values, unscored = [], []
        for o in scoped:
            v = {"ratio": o.ratio, "efficiency": o.eff}.get(t.figure) if t.figure != "vendor" \
                else vendor_ratio(o, rows)
            (values if v is not None else unscored).append((v, o))
        show = (lambda v: pct(v)) if t.unit == "%" else (lambda v: f"{v:.3g}x")
        bar = pct(t.bar) if t.unit == "%" else f"{t.bar:g}x"
        notes = []
        if unscored:
            why = sorted({o.status if o.status != "passed" else "no figure" for _, o in unscored})
            notes.append(f"{len(unscored)} case(s) without a figure ({', '.join(why)}): missed")
        if values:
            worst, wo = min(values, key=lambda x: x[0])
            below = [v for v, _ in values if v < t.bar]
            met = not below and not unscored
            short = "" if worst >= t.bar else (
                f"{100 * (t.bar - worst):.3g} points short" if t.unit == "%" else
                f"{100 * (1 - worst / t.bar):.3g}% short")
            if below:
                notes.insert(0, f"{len(below)} of {len(values)} below")
            table.append([t.title, str(len(scoped)), f"{show(worst)} at {case_name(wo)}",
                          bar, "met" if met else "**missed**", "; ".join([short] + notes
                                                                         if short else notes),
                          "" if met else measured_limit(t, wo, rows, l2_bytes)])
        else:
            table.append([t.title, str(len(scoped)), "n/a", bar, "**missed**", "; ".join(notes),
                          ""])
    return table, absent


# ---- suggestions ---------------------------------------------------------------------------

BANDWIDTH_HINTS = {
    "transpose": "tile it through shared memory (padded against bank conflicts) so that both "
                 "the reads and the writes are coalesced, and vectorize",
    "permute": "tile the two axes that swap through shared memory so that reads and writes are "
               "coalesced",
    "copy": "vectorize (16-byte loads and stores) with a grid-stride loop",
    "concat": "copy each input with 16-byte vectors, one launch for all inputs",
    "element": "vectorize (16-byte loads, several elements per thread) to keep more bytes in "
               "flight",
    "activation": "vectorize (16-byte loads, several elements per thread) to keep more bytes "
                  "in flight",
    "reduction": "spread each reduction over more threads (warp shuffles, a block per row or a "
                 "two-stage grid reduction) with vectorized loads",
    "normalization": "read each row once: fuse the passes (online softmax, Welford mean and "
                     "variance) and keep the row in registers or shared memory",
}


# The same advice for a CPU backend: caches, SIMD and threads, no GPU terms.
CPU_BANDWIDTH_HINTS = {
    "transpose": "block it in cache-sized tiles so that both the reads and the writes stream",
    "permute": "block the two axes that swap in cache-sized tiles",
    "copy": "use wide SIMD loads and stores and split the buffer over the threads",
    "concat": "copy each input with wide SIMD loads, the inputs split over the threads",
    "element": "vectorize (SIMD, several elements per iteration) and split over the threads",
    "activation": "vectorize (SIMD, several elements per iteration) and split over the threads",
    "reduction": "reduce in SIMD lanes with several accumulators, rows split over the threads",
    "normalization": "read each row once: fuse the passes (online softmax, Welford mean and "
                     "variance) while the row is in cache",
}


def bandwidth_hint(o, op):
    hints = CPU_BANDWIDTH_HINTS if o.device == "cpu" else BANDWIDTH_HINTS
    return hints.get(op, hints.get(o.category, "profile it"))


def launch_hint(o):
    if o.device == "cpu":
        return "the per-call overhead dominates: run small tensors on fewer threads"
    if o.category in ("normalization", "reduction"):
        return "fuse the passes into one kernel launch"
    return "cut the per-call cost (one launch, no allocation or synchronization per call)"


def is_large(o):
    ideal = o.bytes / (o.peak * 1e6) if o.bytes and o.peak else None
    return o.time is not None and o.time >= LAUNCH_MS and (ideal or 0) >= LAUNCH_IDEAL_MS


def by_op(rows):
    groups = {}
    for o in rows:
        groups.setdefault((o.label, o.op), []).append(o)
    return groups.items()


def suggestions(rows, metric_notes):
    """Markdown bullet lines, each from a rule that the numbers fired."""
    out = []
    timed = [o for o in rows if o.time is not None and not o.is_reference]
    # Large memory-bound cases far from the copy bandwidth, not already ahead of PyTorch.
    slow_bw = [o for o in timed if not o.is_matmul and o.eff is not None and
               o.eff < BANDWIDTH_BOUND and is_large(o) and (o.ratio is None or o.ratio < 0.9)]
    for (label, op), group in by_op(slow_bw):
        w = min(group, key=lambda o: o.eff)
        ref = f"PyTorch {pct(w.ref.eff)}, ratio {w.ratio:.3g}x ({w.band})" if w.ratio else \
            "no PyTorch time"
        more = f"; {len(group)} such cases, the worst shown" if len(group) > 1 else ""
        hint = bandwidth_hint(w, op)
        out.append(f"{label} {op} reaches {pct(w.eff)} of the measured copy bandwidth at "
                   f"{w.shape} {w.dtype} ({ref}{more}): {hint}.")
    # Below PyTorch where the call is too short for its bytes to matter.
    launch = [o for o in timed if o.band in BELOW_GOOD and o.limit == "launch-bound"]
    for (label, op), group in by_op(launch):
        w = min(group, key=lambda o: o.ratio)
        more = f"; {len(group)} such cases" if len(group) > 1 else ""
        out.append(f"{label} {op} is below PyTorch at small sizes ({w.ratio:.3g}x at {w.shape} "
                   f"{w.dtype}, {fmt(w.time * 1e3, 3)} us per call{more}): launch-bound: "
                   f"{launch_hint(w)}.")
    # Matmul far from the measured ceiling.
    for o in timed:
        if o.is_matmul and o.compute_eff is not None and o.compute_eff < COMPUTE_BOUND and \
                o.backend != VENDOR_MATMUL:
            v = vendor_ratio(o, rows)
            vend = f", {v:.3g}x {VENDOR_MATMUL}" if v is not None else ""
            hint = ("cache blocking with a SIMD register-tile micro-kernel, tiles split over "
                    "the threads" if o.device == "cpu" else
                    "register blocking and vectorized shared-memory loads (no tensor cores in "
                    "fp32)" if o.dtype == "fp32" else
                    "tensor cores (mma) fed by a multi-stage cp.async pipeline, larger tiles")
            out.append(f"{o.label} matmul {o.shape} {o.dtype} reaches {pct(o.compute_eff)} of the "
                       f"measured {o.dtype} ceiling ({fmt(o.gflops / 1e3)} of "
                       f"{fmt(o.ceiling)} TFLOP/s{vend}): {hint}.")
    # A dtype that fares worse than fp32 on the same op.
    for (label, op), group in by_op(timed):
        base = geomean([o.ratio for o in group if o.dtype == "fp32"])
        for dt in ("bf16", "fp16"):
            low = geomean([o.ratio for o in group if o.dtype == dt])
            if base and low and low < LOW_PRECISION_GAP * base and low < 0.9:
                out.append(f"{label} {op} fares worse in {dt} than in fp32 (geometric mean "
                           f"{low:.3g}x vs {base:.3g}x PyTorch): process {dt} in pairs "
                           f"({dt}x2, 16-byte vectors) and accumulate in fp32.")
    # Wrong answers first.
    wrong = {}
    for o in rows:
        if o.status == "incorrect":
            wrong.setdefault(o.label, []).append(o)
    for label, group in wrong.items():
        cases = ", ".join(f"`{o.problem}` (rel L2 err "
                          f"{fmt(number(correctness(o.r).get('rel_l2_err')), 3)})"
                          for o in group[:3])
        more = f" and {len(group) - 3} more" if len(group) > 3 else ""
        out.append(f"{label}: fix correctness first: {len(group)} incorrect case(s): "
                   f"{cases}{more}.")
    if metric_notes:
        out.append(f"The `metrics` myops wrote disagree with the recomputed figures in "
                   f"{len(metric_notes)} place(s) (see Notes): check ops/score.cpp, or the "
                   "limits the run was scored against.")
    return [f"- {s}" for s in out]
