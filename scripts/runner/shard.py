"""Splitting a case list into parts: the shards of --shard I/N and the workers of --gpus. Pure
functions of the case list (and, when given, an earlier run's times), so that every host that
lists the same cases computes the same split: a shard is a deterministic subset, whichever
machine runs it.

The unit of a split is a problem: its cases (one per backend) stay together, since the runner
runs one program invocation per problem, which makes its inputs and float64 reference once.
Units are dealt by estimated cost, largest first, each to the part with the least cost so far
(ties: the earlier unit, the lower part), and each part keeps the case-list order."""

import hashlib
import json
import re

from runner.common import UsageError

# The FLOP estimate of a case's cost, in seconds: each case costs its start-up, compile and the
# sampling (bounded by --max-time-ms, so about constant), plus the float64 reference and the
# runs, which grow with the work.
CASE_OVERHEAD_S = 1.0
FLOP_PER_S = 1e9


def parse_shard(text):
    """(I, N) of "I/N", 1 <= I <= N; UsageError otherwise."""
    m = re.fullmatch(r"([0-9]+)/([0-9]+)", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise UsageError(f"--shard: expected I/N with 1 <= I <= N (e.g. 2/4); got '{text}'")
    return int(m.group(1)), int(m.group(2))


def key_of(case):
    return (case.get("problem", ""), case.get("name", ""), case.get("backend", ""))


def case_list_sha256(cases):
    """The identity of a case list: shards whose lists differ are not parts of one run."""
    h = hashlib.sha256()
    for c in cases:
        h.update((json.dumps(key_of(c)) + "\n").encode())
    return h.hexdigest()


def flop_cost(case):
    flop = case.get("flop")
    flop = flop if isinstance(flop, (int, float)) and flop > 0 else 0.0
    return CASE_OVERHEAD_S + flop / FLOP_PER_S


def time_cost(rec):
    """Seconds a recorded case took, from its figures (compile, first run, the samples of its
    primary time); None when it has none."""
    fig = None
    for name in ("gpu_time_ms", "total_time_ms", "cpu_time_ms"):
        f = rec.get(name)
        if isinstance(f, dict) and isinstance(f.get("median"), (int, float)):
            fig = f
            break
    if fig is None:
        return None
    ms = (fig["median"] * (fig.get("samples") or 1) * (rec.get("runs_per_sample") or 1)
          + (rec.get("compile_time_ms") or 0) + (rec.get("first_run_ms") or 0))
    return CASE_OVERHEAD_S + ms / 1000.0


def load_times(path):
    """case key -> seconds, from an earlier run's results.json (--cost-from)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        results = doc["results"]
        assert isinstance(results, list)
    except (OSError, ValueError, KeyError, TypeError, AssertionError) as e:
        raise UsageError(f"--cost-from: '{path}' is not a results file ({e.__class__.__name__})")
    times = {}
    for r in results:
        if isinstance(r, dict):
            t = time_cost(r)
            if t is not None:
                times[key_of(r)] = t
    return times


def case_costs(cases, times=None):
    """Estimated seconds per case: the earlier run's time where it has the case, else the FLOP
    estimate, scaled by how the two compare on the cases that have both."""
    flops = [flop_cost(c) for c in cases]
    if not times:
        return flops
    known = [(times[key_of(c)], f) for c, f in zip(cases, flops) if key_of(c) in times]
    scale = sum(t for t, _ in known) / sum(f for _, f in known) if known else 1.0
    return [times.get(key_of(c), f * scale) for c, f in zip(cases, flops)]


def units_of(cases):
    """Indices of the cases grouped by problem (descriptor and name), in case-list order."""
    units = {}
    for i, c in enumerate(cases):
        units.setdefault((c.get("problem", ""), c.get("name", "")), []).append(i)
    return list(units.values())


def split(cases, parts, costs):
    """The case indices of each of `parts` parts (lists in case-list order) and their costs."""
    units = units_of(cases)
    unit_cost = [sum(costs[i] for i in u) for u in units]
    order = sorted(range(len(units)), key=lambda u: (-unit_cost[u], u))
    load = [0.0] * parts
    members = [[] for _ in range(parts)]
    for u in order:
        p = min(range(parts), key=lambda k: (load[k], k))
        load[p] += unit_cost[u]
        members[p] += units[u]
    return [sorted(m) for m in members], load


def shard_of(cases, index, count, times=None, cost_source="flop"):
    """(the cases of shard index/count, its run.json record)."""
    costs = case_costs(cases, times)
    members, load = split(cases, count, costs)
    mine = members[index - 1]
    total = sum(load)
    record = {"index": index, "count": count, "cases_total": len(cases),
              "case_list_sha256": case_list_sha256(cases), "cost": cost_source,
              "estimated_cost_s": round(load[index - 1], 3),
              "estimated_cost_share": round(load[index - 1] / total, 4) if total else None,
              "case_indices": mine}
    return [cases[i] for i in mine], record
