#!/usr/bin/env python3
"""Corrects the source record of result files that named the wrong source, where other evidence
(a session's README, a device's `git status`) establishes what was built. The wrong value is kept.

  scripts/correct_source.py --commit REV [--dirty] --reason TEXT FILE...

Sets `system.git_commit` (12 hex digits, "-dirty" with --dirty) and `system.source` (results/
README.md) with `origin: "corrected"`, `recorded_git_commit` (what the file said) and
`correction` (TEXT: how the source was established). With --dirty the difference was not kept:
`diff_file` is null and `diff_lost` true. REV must name a commit of this repository. Idempotent:
a file already corrected to the same record is left as it is. Exit codes: 0 done; 2 bad input.
"""

import argparse
import json
import os
import subprocess
import sys

PROG = "correct_source.py"


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--commit", required=True)
    ap.add_argument("--dirty", action="store_true")
    ap.add_argument("--reason", required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run(["git", "-C", root, "rev-parse", "--verify", "--quiet", a.commit + "^{commit}"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(f"{PROG}: error: --commit: '{a.commit}' is not a commit of {root}", file=sys.stderr)
        return 2
    full = p.stdout.strip()
    short = full[:12] + ("-dirty" if a.dirty else "")
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
        old = system.get("source") or {}
        recorded = old.get("recorded_git_commit", system.get("git_commit"))
        source = {"commit": full, "commit_short": short, "dirty": a.dirty, "origin": "corrected",
                  "diff_sha256": None, "diff_bytes": None, "diff_file": None}
        if a.dirty:
            source["diff_lost"] = True
        source["recorded_git_commit"] = recorded
        source["correction"] = a.reason
        if system.get("git_commit") == short and old == source:
            continue
        system["git_commit"] = short
        system["source"] = source
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
