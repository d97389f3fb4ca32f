"""The op suite's figures, recomputed from each result's raw fields (never taken from `metrics` on
trust): the primary time, GB/s against the measured copy bandwidth of the backend's device
(system.bandwidth), FLOP/s against the measured matmul ceiling (system.matmul_ceiling), the ratio
PyTorch time / backend time on the same device, problem and timing mode, Genesis's band, and for
a case below "good" the limit that holds it back. The `metrics` myops wrote are checked against
these figures: a disagreement of more than 1% is a note (a broken writer, or another reference).
"""

import math

from analysis.common import (device_of, dtype_of, median, number, params, passed, primary,
                             suite_of)

# The backend every ratio is against, per device (ops/score.cpp reference_backend).
REFERENCE = {"cuda": "libtorch_cuda", "cpu": "libtorch_cpu"}
OWN = "own_cuda"            # our kernels: the backend the targets are about
VENDOR_MATMUL = "cublaslt"  # the matmul target's yardstick
CATEGORIES = ["element", "activation", "reduction", "normalization", "matmul", "memory"]
OP_CATEGORY = {
    **dict.fromkeys(["add", "sub", "mul", "div"], "element"),
    **dict.fromkeys(["relu", "sigmoid", "tanh", "gelu_erf", "gelu_tanh", "silu"], "activation"),
    **dict.fromkeys(["sum", "mean", "max"], "reduction"),
    **dict.fromkeys(["softmax", "layernorm", "rmsnorm"], "normalization"),
    "matmul": "matmul",
    **dict.fromkeys(["copy", "transpose", "permute", "concat"], "memory")}
OP_ORDER = list(OP_CATEGORY)
# Genesis's bands of PyTorch time / backend time (ops/score.cpp score_band).
BANDS = [(0.9, "excellent"), (0.7, "good"), (0.5, "fair"), (0.2, "poor"), (-math.inf, "critical")]
BAND_ORDER = [b for _, b in BANDS]
BELOW_GOOD = ("fair", "poor", "critical")
# The rules that name a slow case's limit (the report prints them with these numbers).
COMPUTE_BOUND = 0.70    # matmul at >= 70% of the measured ceiling of its dtype
BANDWIDTH_BOUND = 0.60  # >= 60% of the measured copy bandwidth
LAUNCH_MS = 0.010       # a call under 10 us ...
LAUNCH_IDEAL_MS = 0.005  # ... or whose bytes take under 5 us at the measured copy bandwidth
SMALL_BYTES = 1 << 20   # without a measured bandwidth: under 1 MiB moved
# Size classes by elements (input elements; matmul: output elements b*m*n), around the op lists'
# classes (experiments/ops: small 64K-262K, medium ~4.2M, large ~16.8M, xlarge ~67M).
SIZE_CLASSES = [("small", 512 * 1024), ("medium", 8 << 20), ("large", 32 << 20),
                ("xlarge", math.inf)]
DISAGREEMENT = 0.01


def band(ratio):
    return next(name for low, name in BANDS if ratio >= low)


def size_class(elements):
    return next(name for name, top in SIZE_CLASSES if elements <= top) if elements else "n/a"


def geomean(values):
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def middle(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def product(dims):
    out = 1
    for d in dims:
        out *= d
    return out


def dims(x):
    """A list of positive ints from a params field, else None."""
    if not isinstance(x, list) or not all(isinstance(d, int) and d > 0 for d in x):
        return None
    return x


class Limits:
    """The measured limits of the first input that recorded them."""

    def __init__(self, inputs):
        self.cuda = self.cpu = self.ceiling = None
        self.cuda_why = self.cpu_why = self.ceiling_why = None
        for doc in inputs:
            s = doc["system"]
            bw = s.get("bandwidth") if isinstance(s.get("bandwidth"), dict) else {}
            for entry in (bw.get("cuda") if isinstance(bw.get("cuda"), list) else []):
                # The runner's device is the first one measured (ops/score.cpp does the same).
                if self.cuda is None and isinstance(entry, dict):
                    if number(entry.get("measured_copy_gbs")):
                        self.cuda = entry
                    elif entry.get("why") and not self.cuda_why:
                        self.cuda_why = str(entry["why"])
            cpu = bw.get("cpu")
            if self.cpu is None and isinstance(cpu, dict):
                if number(cpu.get("measured_copy_gbs")):
                    self.cpu = cpu
                elif cpu.get("why") and not self.cpu_why:
                    self.cpu_why = str(cpu["why"])
            if bw.get("why") and not (self.cuda_why or self.cpu_why):
                self.cuda_why = self.cpu_why = str(bw["why"])
            mc = s.get("matmul_ceiling")
            if self.ceiling is None and isinstance(mc, dict):
                if isinstance(mc.get("tflops"), dict) and mc["tflops"]:
                    self.ceiling = mc
                elif mc.get("why") and not self.ceiling_why:
                    self.ceiling_why = str(mc["why"])

    def peak_gbs(self, device):
        entry = self.cuda if device == "cuda" else self.cpu if device == "cpu" else None
        return number(entry.get("measured_copy_gbs")) if entry else None

    def ceiling_tflops(self, dtype):
        return number(self.ceiling["tflops"].get(dtype)) if self.ceiling else None


class OpRow:
    """One op result with the figures the report derives from its raw fields."""

    def __init__(self, r, source, multi, limits):
        p = params(r)
        self.r, self.source = r, source
        self.backend = r["backend"]
        self.label = f"{self.backend} #{source + 1}" if multi else self.backend
        self.device = device_of(r)
        self.status = r["status"]
        self.problem = r["problem"]
        self.op = p.get("op") if isinstance(p.get("op"), str) else self.problem.split(":")[0]
        cat = p.get("category")
        self.category = cat if isinstance(cat, str) and cat else OP_CATEGORY.get(self.op, "other")
        self.dtype = dtype_of(r)
        self.timing = r.get("timing_mode") if isinstance(r.get("timing_mode"), str) else ""
        self.is_matmul = self.op == "matmul"
        if self.is_matmul:
            b, m, n, k = (p.get(x) for x in ("b", "m", "n", "k"))
            ok = all(isinstance(v, int) for v in (m, n, k))
            self.shape = (f"{b}x" if isinstance(b, int) and b > 1 else "") + (
                f"{m}x{n}x{k} (mxnxk)" if ok else "?")
            self.elements = (b if isinstance(b, int) else 1) * m * n if ok else None
        else:
            shape, rhs = dims(p.get("shape")), dims(p.get("rhs"))
            self.shape = "x".join(map(str, shape)) if shape else "?"
            if rhs:
                self.shape += "+" + "x".join(map(str, rhs))
            self.elements = product(shape) if shape else None
        self.size = size_class(self.elements)
        # Work counts that are not positive (none recorded, or a broken record) count as none.
        self.bytes, self.flop = (x if x and x > 0 else None
                                 for x in (number(r.get("bytes")), number(r.get("flop"))))
        self.time, self.figure = primary(r) if passed(r) else (None, None)
        self.peak = limits.peak_gbs(self.device)
        self.gbs = self.eff = self.gflops = self.ceiling = self.compute_eff = None
        if self.time and self.time > 0:
            if self.bytes:
                self.gbs = self.bytes / (self.time * 1e6)  # bytes / ms -> GB/s
                self.eff = self.gbs / self.peak if self.peak else None
            if self.flop:
                self.gflops = self.flop / (self.time * 1e6)
                if self.is_matmul and self.device == "cuda":
                    self.ceiling = limits.ceiling_tflops(self.dtype)
                    if self.ceiling:
                        self.compute_eff = self.gflops / 1e3 / self.ceiling
        self.ref = self.ratio = self.band = self.limit = None
        self.is_reference = self.backend == REFERENCE.get(self.device)

    def key(self):
        """What a reference must share: the problem and the timing mode, real or pure (a pure
        case replayed as a graph and one issued back to back are both pure: calls per sample
        without a synchronization between them)."""
        return (self.problem, self.timing.split(":")[0])


def comparable(a, b):
    """Times of a and b measured the same way: primary times when both use the same figure, else
    both total medians."""
    if a.figure == b.figure:
        return a.time, b.time
    return median(a.r, "total_time_ms"), median(b.r, "total_time_ms")


def ratio_against(row, other):
    """other's time / row's time, timed the same way (how many times faster row is)."""
    if row.time is None or other is None or other.time is None:
        return None
    mine, theirs = comparable(row, other)
    if not mine or not theirs or mine <= 0:
        return None
    return theirs / mine


def limit_of(row):
    """The limit of a slow case, by the rules in order (the report prints them)."""
    if row.is_matmul and row.compute_eff is not None and row.compute_eff >= COMPUTE_BOUND:
        return "compute-bound"
    if row.eff is not None and row.eff >= BANDWIDTH_BOUND:
        return "bandwidth-bound"
    ideal = row.bytes / (row.peak * 1e6) if row.bytes and row.peak else None
    if (row.time is not None and row.time < LAUNCH_MS) or (
            ideal is not None and ideal < LAUNCH_IDEAL_MS) or (
            ideal is None and row.bytes is not None and row.bytes < SMALL_BYTES):
        return "launch-bound"
    return "inefficient kernel"


def build_rows(inputs, limits):
    """Every op result as an OpRow, with its reference, ratio, band and limit."""
    multi = len(inputs) > 1
    rows = [OpRow(r, i, multi, limits) for i, doc in enumerate(inputs) for r in doc["results"]
            if suite_of(r) == "ops"]
    refs = {}
    for o in rows:
        if o.is_reference and o.time is not None:
            refs.setdefault((o.device, o.key()), []).append(o)
    for o in rows:
        cands = refs.get((o.device, o.key()), [])
        same = [c for c in cands if c.source == o.source]
        o.ref = (same or cands or [None])[0]
        if o.time is None or o.ref is None:
            continue
        if o.ref is o:  # PyTorch itself: ratio 1 by definition, no band
            o.ratio = 1.0
            continue
        o.ratio = ratio_against(o, o.ref)
        if o.ratio is not None:
            o.band = band(o.ratio)
            if o.band in BELOW_GOOD:
                o.limit = limit_of(o)
    return rows


def metric_notes(rows):
    """Lines naming every `metrics` figure that differs from the recomputed one by more than 1%."""
    notes = []
    for o in rows:
        m = o.r.get("metrics")
        if not isinstance(m, dict) or o.time is None:
            continue
        ref_named = m.get("reference_backend")
        same_ref = o.ref is not None and (ref_named is None or ref_named == o.ref.backend)
        checks = [("bandwidth_gbs", o.gbs), ("peak_bandwidth_gbs", o.peak),
                  ("bandwidth_efficiency", o.eff), ("gflops", o.gflops),
                  ("matmul_ceiling_tflops", o.ceiling), ("compute_efficiency", o.compute_eff)]
        if same_ref:
            checks.append(("speedup_vs_pytorch", o.ratio))
        for field, mine in checks:
            theirs = number(m.get(field))
            if theirs is None or mine is None:
                continue
            apart = abs(theirs - mine) / abs(mine) if mine else abs(theirs)
            if apart > DISAGREEMENT:
                notes.append(f"{o.label} `{o.problem}` ({o.timing or 'timing n/a'}): "
                             f"metrics.{field} {theirs:.4g}, recomputed {mine:.4g} "
                             f"({100 * apart:.3g}% apart)")
        if same_ref and isinstance(m.get("score_band"), str) and o.band and \
                m["score_band"] != o.band:
            notes.append(f"{o.label} `{o.problem}`: metrics.score_band {m['score_band']}, "
                         f"recomputed {o.band} (ratio {o.ratio:.4g})")
    return notes
