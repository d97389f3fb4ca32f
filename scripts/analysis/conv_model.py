"""The conv suite's results as the report reads them: one Row a result record, grouped per problem
(problem, dtype, layout), with the derived figures the report and its plots share (speed-up against
LibTorch on the same device, winners, the roofline ceilings and achieved FLOP/s, labels).
"""

from analysis.common import DTYPE_ORDER, device_of, median, number, passed, primary, problem_key

# The reference each backend's speed-up is taken against: LibTorch on the same device.
REFERENCE = {"cuda": "libtorch_cuda", "cpu": "libtorch_cpu"}


class Row:
    """One result record with what the report derives from it."""

    def __init__(self, r, source, multi):
        self.r = r
        self.source = source
        self.backend = r["backend"]
        self.label = f"{self.backend} #{source + 1}" if self.backend in multi else self.backend
        self.device = device_of(r)
        self.status = r["status"]
        self.time, self.figure = primary(r) if passed(r) else (None, None)
        self.compile = number(r.get("compile_time_ms"))
        self.throttled = r.get("throttled") is True


def group_problems(inputs):
    # A backend found in several inputs is labelled by its input's number (#1, #2); one found in a
    # single input (an external reference's file beside results.json) keeps its name.
    seen = {}
    for i, doc in enumerate(inputs):
        for r in doc["results"]:
            seen.setdefault(r["backend"], set()).add(i)
    multi = {b for b, files in seen.items() if len(files) > 1}
    groups = {}
    for i, doc in enumerate(inputs):
        for r in doc["results"]:
            groups.setdefault(problem_key(r), []).append(Row(r, i, multi))
    return groups


def reference_row(rows, row):
    """The passed LibTorch record on the row's device for the same problem (same file first)."""
    name = REFERENCE.get(row.device)
    candidates = [o for o in rows if o.backend == name and o.time is not None]
    same = [o for o in candidates if o.source == row.source]
    return (same or candidates or [None])[0]


def comparable(a, b):
    """Times of a and b measured the same way: both primary times when they use the same figure,
    else both total medians."""
    if a.figure == b.figure:
        return a.time, b.time
    return median(a.r, "total_time_ms"), median(b.r, "total_time_ms")


def speedup(rows, row):
    ref = reference_row(rows, row)
    if ref is None or row.time is None:
        return None
    mine, theirs = comparable(row, ref)
    if mine is None or theirs is None or mine <= 0:
        return None
    return theirs / mine


def winner(rows, device=None):
    best = None
    for o in rows:
        if o.time is None or (device and o.device != device):
            continue
        if best is None or o.time < best.time:
            best = o
    return best



def ceilings(gpu):
    """(bandwidth GB/s, field) and {dtype: (TFLOP/s, field)} from one system.gpus entry."""
    if not gpu:
        return None, {}
    bandwidth = None
    for field in ("peak_bandwidth_gbps", "peak_bandwidth_gb_s", "theoretical_memory_bandwidth_gb_s",
                  "memory_bandwidth_gbps"):
        if number(gpu.get(field)) is not None:
            bandwidth = (number(gpu[field]), field)
            break
    peaks = {}
    for dt in DTYPE_ORDER:
        for field in (f"peak_{dt}_tflops", f"peak_tflops_{dt}"):
            if number(gpu.get(field)) is not None:
                peaks[dt] = (number(gpu[field]), field)
                break
    for obj_field in ("theoretical_peak_tflops", "peak_tflops"):
        obj = gpu.get(obj_field)
        if isinstance(obj, dict):
            for dt, v in obj.items():
                if dt not in peaks and number(v) is not None:
                    peaks[dt] = (number(v), f"{obj_field}.{dt}")
    return bandwidth, peaks


def achieved_tflops(row):
    flop = number(row.r.get("flop"))
    gpu = median(row.r, "gpu_time_ms") if row.time is not None else None
    if flop is None or gpu is None or gpu <= 0:
        return None
    return flop / (gpu * 1e-3) / 1e12


def roof_tflops(ai, dt, bandwidth, peaks):
    roofs = []
    if bandwidth and ai is not None:
        roofs.append(bandwidth[0] * ai / 1e3)  # GB/s x FLOP/B = GFLOP/s
    if dt in peaks:
        roofs.append(peaks[dt][0])
    return min(roofs) if roofs else None


def problem_title(key, rows):
    suite, problem, dt, lay = key
    names = sorted({o.r.get("name") for o in rows if isinstance(o.r.get("name"), str)
                    and o.r.get("name")})
    label = f"{', '.join(names)}: " if names else ""
    return f"{label}`{problem}` ({dt}, {lay}" + (f", suite {suite})" if suite != "conv" else ")")


def cell_label(key, rows):
    suite, problem, dt, lay = key
    names = [o.r.get("name") for o in rows if isinstance(o.r.get("name"), str) and o.r.get("name")]
    base = names[0] if names else problem
    return f"{base} {dt}" + (f" {lay}" if lay != "nchw" else "")


def backend_order(groups):
    order = []
    for group in groups.values():
        for o in group:
            if o.label not in order:
                order.append(o.label)
    return order
