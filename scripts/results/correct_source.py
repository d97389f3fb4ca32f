#!/usr/bin/env python3
"""Corrects the source record of result files that named the wrong source, where other evidence
(a run folder's README, a device's `git status`) establishes what was built. The wrong value is
kept.

  scripts/results/correct_source.py --commit REV [--dirty yes|no|unknown] --reason TEXT FILE...

Sets `system.git_commit` (12 hex digits, "-dirty" with --dirty yes) and `system.source` (results/
README.md), and those of each part's `systems[].system` in a merged run, with
`origin: "corrected"`, `recorded_git_commit` (what the file said) and `correction` (TEXT: how the
source was established). --dirty yes: the tree differed from REV and
the difference was not kept (`diff_lost`); unknown: the evidence names REV but cannot say whether
the tree differed (`dirty` null); no (the default): the tree was REV's. REV must name a commit of this repository. Idempotent:
a file already corrected to the same record is left as it is. Exit codes: 0 done; 2 bad input.
"""

import argparse
import json
import os
import subprocess
import sys

PROG = "correct_source.py"


def correct(system, full, short, dirty, reason):
    """Sets one `system`'s git_commit and source to the corrected record; False where it already
    holds it."""
    old = system.get("source") or {}
    source = {"commit": full, "commit_short": short, "dirty": dirty, "origin": "corrected",
              "diff_sha256": None, "diff_bytes": None, "diff_file": None}
    if dirty:
        source["diff_lost"] = True
    source["recorded_git_commit"] = old.get("recorded_git_commit", system.get("git_commit"))
    source["correction"] = reason
    if system.get("git_commit") == short and old == source:
        return False
    system["git_commit"] = short
    system["source"] = source
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--commit", required=True)
    ap.add_argument("--dirty", choices=("yes", "no", "unknown"), default="no")
    ap.add_argument("--reason", required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    p = subprocess.run(["git", "-C", root, "rev-parse", "--verify", "--quiet", a.commit + "^{commit}"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(f"{PROG}: error: --commit: '{a.commit}' is not a commit of {root}", file=sys.stderr)
        return 2
    full = p.stdout.strip()
    short = full[:12] + ("-dirty" if a.dirty == "yes" else "")
    dirty = {"yes": True, "no": False, "unknown": None}[a.dirty]
    changed = 0
    for path in a.files:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            doc = json.loads(text)
            system = doc["system"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"{PROG}: error: '{path}' is not a result file: {e}", file=sys.stderr)
            return 2
        # A merged run (--gpus, shards) keeps each part's own system in `systems`: each named
        # the same build, so each is corrected alike.
        parts = [system] + [part["system"] for part in doc.get("systems") or []
                            if isinstance(part, dict) and isinstance(part.get("system"), dict)]
        changes = [correct(part, full, short, dirty, a.reason) for part in parts]  # each part
        if not any(changes):
            continue
        lines = text.splitlines()
        indent = len(lines[1]) - len(lines[1].lstrip(" ")) if len(lines) > 1 else None
        tmp = f"{path}.tmp.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(doc, indent=indent or None, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
        changed += 1
    print(f"{PROG}: {changed} file(s) corrected to {short}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
