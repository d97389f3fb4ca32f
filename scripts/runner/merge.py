"""One run folder's results made from several run folders (parts): the workers of a --gpus run
(runner/workers.py) and the shards of --shard runs (scripts/merge_results.py). The merged
results.json keeps one schema: its results follow the given case order, `system` is the first
part's (its `gpus` the union of every part's, `host` every host's name), and `systems` keeps
each part's own system description side by side (results/README.md)."""

import json
import os
import shutil

from runner.cases import case_key, read_csv_rows
from runner.common import UsageError, read_json_results, shown, write_atomic
from runner.output import FALLBACK_CSV_HEADER, csv_field, flatten

# The source fields two builds must share to count as the same program (cases.py, --resume).
SAME_SOURCE = ("commit", "origin", "diff_sha256", "modified_since_stamp")


class Part:
    """A run folder read back: run.json, cases.jsonl, results.json, results.csv."""

    def __init__(self, path, name=None):
        self.path = os.path.abspath(path)
        self.name = name or os.path.basename(self.path)
        try:
            with open(os.path.join(self.path, "run.json"), encoding="utf-8") as f:
                self.config = json.load(f)
            with open(os.path.join(self.path, "cases.jsonl"), encoding="utf-8") as f:
                self.cases = [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError) as e:
            raise UsageError(f"'{shown(path)}' is not a run folder of run_all_experiments.sh "
                             f"({e.__class__.__name__}: {getattr(e, 'strerror', None) or e})")
        self.doc = read_json_results(os.path.join(self.path, "results.json")) or {
            "results": [], "system": {}}
        self.records = {case_key(r): r for r in self.doc["results"]}
        self.csv_header, rows = read_csv_rows(os.path.join(self.path, "results.csv"))
        self.csv_rows = {(r.get("problem", ""), r.get("name", ""), r.get("backend", "")): r
                         for r in rows}

    @property
    def recorded(self):
        return sum(1 for c in self.cases if case_key(c) in self.records)

    @property
    def complete(self):
        return self.recorded == len(self.cases)


def source_name(s):
    s = s or {}
    diff = f", difference {str(s.get('diff_sha256'))[:12]}" if s.get("diff_bytes") else ""
    return f"{s.get('commit_short')} ({s.get('origin')}{diff})"


def check_same_run(parts, what="parts"):
    """One program, one suite, one schema, one timing: refuses (UsageError) parts that differ."""
    first = parts[0]
    for p in parts[1:]:
        a, b = first.config.get("source") or {}, p.config.get("source") or {}
        if any(a.get(k) != b.get(k) for k in SAME_SOURCE):
            raise UsageError(f"{what} built from different source: '{shown(first.path)}' "
                             f"{source_name(a)}, '{shown(p.path)}' {source_name(b)}")
        for field in ("suite", "schema_version", "extra_args", "quick"):
            if first.config.get(field) != p.config.get(field):
                raise UsageError(f"{what} of different runs: '{shown(first.path)}' and "
                                 f"'{shown(p.path)}' differ in {field} "
                                 f"({first.config.get(field)!r} vs {p.config.get(field)!r})")


def merged_system(parts):
    systems = [p.doc.get("system") or {} for p in parts]
    base = dict(next((s for s in systems if s.get("source")), systems[0]))
    hosts = list(dict.fromkeys(s.get("host") for s in systems if s.get("host")))
    if hosts:
        base["host"] = ", ".join(hosts)
    gpus = []
    for s in systems:
        for g in s.get("gpus") or []:
            if g not in gpus:
                gpus.append(g)
    base["gpus"] = gpus
    # The transformer suite's models: every part's.
    models = {}
    for s in systems:
        for m in s.get("models") or []:
            if isinstance(m, dict):
                models.setdefault(m.get("name"), m)
    if models:
        base["models"] = list(models.values())
    # The op suite's limits: each worker measured its own devices' (a GPU worker its GPU's, the
    # CPU worker the host's); the merged run is scored against the first of each kind.
    bandwidth = {}
    for s in systems:
        b = s.get("bandwidth")
        for kind in ("cpu", "cuda"):
            if isinstance(b, dict) and b.get(kind) and kind not in bandwidth:
                bandwidth[kind] = b[kind]
    if bandwidth:
        base["bandwidth"] = bandwidth
    ceiling = next((s["matmul_ceiling"] for s in systems if isinstance(s.get("matmul_ceiling"),
                                                                      dict)
                    and s["matmul_ceiling"].get("tflops")), None)
    if ceiling:
        base["matmul_ceiling"] = ceiling
    return base


def write_merged(out_dir, cases, parts, run, cases_total=None):
    """RUN/results.json and RUN/results.csv of `cases` (in this order) from the parts' records;
    `run` is the merged run's `run` object, to which cases/recorded/complete are added (cases:
    cases_total where some cases are not known, as those of a missing shard)."""
    records, rows, header = {}, {}, None
    for p in parts:
        for k, r in p.records.items():
            records.setdefault(k, r)
        for k, r in p.csv_rows.items():
            rows.setdefault(k, r)
        header = header or (p.csv_header or None)
    keys = [case_key(c) for c in cases]
    results = [records[k] for k in keys if k in records]
    system = merged_system(parts)
    if isinstance(system.get("source"), dict):
        system["source"] = dict(system["source"])
        has_diff = os.path.exists(os.path.join(out_dir, "source.diff"))
        system["source"]["diff_file"] = "source.diff" if has_diff else None
    total = len(keys) if cases_total is None else cases_total
    run = dict(run, cases=total, recorded=len(results), complete=len(results) == total)
    versions = {p.doc.get("schema_version") for p in parts if p.doc.get("schema_version")}
    doc = {"schema_version": min(versions) if versions else parts[0].config["schema_version"],
           "system": system,
           "systems": [{"part": p.name, "host": (p.doc.get("system") or {}).get("host"),
                        "system": p.doc.get("system") or {}} for p in parts],
           "run": run, "results": results}
    write_atomic(os.path.join(out_dir, "results.json"),
                 json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    header = header or FALLBACK_CSV_HEADER
    lines = [",".join(header)]
    for k in keys:
        if k in records:
            row = rows.get(k) or flatten(records[k], header)
            lines.append(",".join(csv_field(row.get(c) or "") for c in header))
    write_atomic(os.path.join(out_dir, "results.csv"), "\n".join(lines) + "\n")
    return run


def copy_source_diff(parts, out_dir):
    for p in parts:
        src = os.path.join(p.path, "source.diff")
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(out_dir, "source.diff"))
            return
