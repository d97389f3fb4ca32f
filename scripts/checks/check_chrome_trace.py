#!/usr/bin/env python3
"""Checks Chrome trace files (the JSON object format Perfetto and chrome://tracing import) against
the Trace Event Format's rules, so that a file that would not load fails here.

    python3 scripts/checks/check_chrome_trace.py TRACE.json [TRACE.json ...]

Rules checked: a top-level object with a "traceEvents" array; every event has a known "ph", a
"name", integer "pid" and "tid", and (except metadata) a finite number "ts" in microseconds;
complete events ("X") have a "dur" >= 0; metadata events ("M") are process_name/thread_name/
*_sort_index with "args"; flow events ("s", "f") carry an "id" and a "cat", every flow start has
its finish with the same (cat, id), the finish binds to the enclosing slice ("bp": "e") and does
not come before its start, and each flow end lies within a complete event of its thread (Perfetto
binds flows to the slice that encloses them). Prints one line per file; exit 0 when every file
passes, 1 otherwise, 2 for unreadable input."""
import json
import math
import sys

KNOWN_PH = set("BEXiIMsftCbneOND")


def check(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{path}: unreadable: {e}", file=sys.stderr)
        sys.exit(2)
    errors = []
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["not an object with a traceEvents array"]
    events = doc["traceEvents"]
    slices = {}
    starts, finishes = {}, {}
    for i, e in enumerate(events):
        where = f"event {i}"
        ph = e.get("ph")
        if ph not in KNOWN_PH:
            errors.append(f"{where}: unknown ph {ph!r}")
            continue
        if not isinstance(e.get("name"), str):
            errors.append(f"{where}: no name")
        # Integers, or names: Kineto (LibTorch 2.x) writes its profiler span rows as
        # "pid": "Spans", "tid": "PyTorch Profiler", which the trace viewers take as labels.
        if not all(isinstance(e.get(k), (int, str)) and not isinstance(e.get(k), bool)
                   for k in ("pid", "tid")):
            errors.append(f"{where}: pid/tid neither integers nor names")
        if ph == "M":
            if not isinstance(e.get("args"), dict):
                errors.append(f"{where}: metadata without args")
            continue
        ts = e.get("ts")
        if not isinstance(ts, (int, float)) or not math.isfinite(ts):
            errors.append(f"{where}: ts not a finite number")
            continue
        if ph == "X":
            dur = e.get("dur")
            if not isinstance(dur, (int, float)) or dur < 0:
                errors.append(f"{where}: X without dur >= 0")
            else:
                slices.setdefault((e["pid"], e["tid"]), []).append((ts, ts + dur))
        if ph in "sf":
            if "id" not in e or not isinstance(e.get("cat"), str):
                errors.append(f"{where}: flow event without id or cat")
                continue
            (starts if ph == "s" else finishes)[(e["cat"], e["id"])] = e
            if ph == "f" and e.get("bp") != "e":
                errors.append(f"{where}: flow finish not bound to the enclosing slice (bp 'e')")
    for key, s in starts.items():
        f = finishes.get(key)
        if f is None:
            errors.append(f"flow {key}: start without finish")
        elif f["ts"] < s["ts"]:
            errors.append(f"flow {key}: finish before start")
    for key in finishes.keys() - starts.keys():
        errors.append(f"flow {key}: finish without start")
    for key, e in list(starts.items()) + list(finishes.items()):
        inside = any(a <= e["ts"] <= b for a, b in slices.get((e["pid"], e["tid"]), []))
        if not inside:
            errors.append(f"flow {key} ({e['ph']}): no slice of its thread encloses ts {e['ts']}")
    return errors


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) > 1 else 2
    bad = 0
    for path in sys.argv[1:]:
        errors = check(path)
        if errors:
            bad += 1
            print(f"{path}: FAILED: {len(errors)} problem(s): " + "; ".join(errors[:5]))
        else:
            with open(path) as f:
                doc = json.load(f)
            kinds = {}
            for e in doc["traceEvents"]:
                kinds[e["ph"]] = kinds.get(e["ph"], 0) + 1
            print(f"{path}: ok ({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
