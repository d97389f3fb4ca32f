#!/usr/bin/env python3
"""Upgrades myconv result files in place to the current schema_version
(scripts/results/results_schema.py says what changed). Idempotent: files already current are left
untouched.

  scripts/results/migrate_results.py PATH...     files or folders (searched recursively)

Rewrites: result JSON (results.json, myconv --json files: problem, command, params), run folders'
cases.jsonl and cases/*.json, and CSV files written by myconv (problem and command columns).
Reports (report.md) are not rewritten here: make them again from the JSON with the command in
their "Made by" line. Console logs (*.txt, *.log) are left as they were printed.
Exit codes: 0 done; 2 bad input (one line).
"""

import csv
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # scripts/
from results import results_schema  # noqa: E402

PROG = "migrate_results.py"


def write_text(path, text):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def migrate_json(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    doc = json.loads(text)
    # The file's own indentation, so that the diff shows only what changed.
    lines = text.splitlines()
    indent = len(lines[1]) - len(lines[1].lstrip(" ")) if len(lines) > 1 else None
    if not isinstance(doc, dict) or doc.get("schema_version") != 1:
        return False
    results_schema.upgrade(doc)
    doc["schema_migration"] = {
        "from_schema_version": 1,
        "by": "scripts/results/migrate_results.py",
        "what": "conv descriptors and params rewritten in benchdnn's grammar (dh/dw count the "
                "gaps; width fields written together); every measured figure unchanged"}
    write_text(path, json.dumps(doc, indent=indent or None, ensure_ascii=False) + "\n")
    return True


def migrate_jsonl(path):
    """cases.jsonl of a run folder: one version-1 identity record per line. A run folder's
    results.json tells its version; the lines themselves carry none."""
    results = os.path.join(os.path.dirname(path), "results.json")
    try:
        with open(results, encoding="utf-8") as f:
            if json.load(f).get("schema_version") != 1:
                return False
    except (OSError, ValueError):
        return False
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(json.dumps(results_schema.upgrade_result(json.loads(line))) + "\n")
    write_text(path, "".join(out))
    return True


def migrate_csv(path, version):
    if version != 1:
        return False
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows or "problem" not in rows[0]:
        return False
    header = rows[0]
    for row in rows[1:]:
        rec = dict(zip(header, row))
        results_schema.upgrade_result(rec)
        for col in ("problem", "command"):
            if col in header and col in rec:
                row[header.index(col)] = rec[col]
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    write_text(path, text.getvalue())
    return True


def version_of_sibling_json(path):
    """The schema version a CSV was written with: that of the JSON beside it with the same stem
    (myconv --json/--csv) or of the run folder's results.json."""
    stem = os.path.splitext(path)[0]
    for candidate in (stem + ".json", os.path.join(os.path.dirname(path), "results.json")):
        try:
            with open(candidate, encoding="utf-8") as f:
                return json.load(f).get("schema_version")
        except (OSError, ValueError, AttributeError):
            continue
    return None


def files_under(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                for n in sorted(names):
                    yield os.path.join(root, n)
        elif os.path.isfile(p):
            yield p
        else:
            raise FileNotFoundError(p)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    try:
        files = list(files_under(argv))
    except FileNotFoundError as e:
        print(f"{PROG}: error: no such file or folder: '{e}'", file=sys.stderr)
        return 2
    # CSV versions are read before their JSON is upgraded.
    csv_versions = {f: version_of_sibling_json(f) for f in files if f.endswith(".csv")}
    changed = 0
    try:
        for f in files:
            if f.endswith(".jsonl"):
                changed += migrate_jsonl(f)
        for f in files:
            if f.endswith(".csv"):
                changed += migrate_csv(f, csv_versions[f])
        for f in files:
            if f.endswith(".json"):
                changed += migrate_json(f)
    except (ValueError, results_schema.DescriptorError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(f"{PROG}: {changed} file(s) upgraded to schema_version {results_schema.SCHEMA_VERSION}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
