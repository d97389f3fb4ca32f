#!/usr/bin/env python3
"""Reads every shape file of a oneDNN checkout's benchdnn conv inputs with myconv and accounts for
every problem token: a case each (run, or recorded as unsupported with the reason), or a note
(a repeated problem runs once). Prints a Markdown table, one row per file.

  scripts/checks/check_benchdnn_shapes.py --myconv BIN DIR [--output FILE]
      DIR: oneDNN's tests/benchdnn/inputs/conv (or any folder of shapes_* files)

A file passes when `myconv --shapes FILE --list-cases` exits 0 and its case count plus the repeats
it noted equals the file's problem tokens, and every benchdnn option in it was noted.
Exit codes: 0 every file passed; 1 some did not (their rows say why); 2 bad input.
"""

import argparse
import json
import os
import subprocess
import sys


def tokens(path):
    """Problem tokens and option tokens of a benchdnn input file ('#' comments, whitespace)."""
    problems = options = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            for t in line.split("#", 1)[0].split():
                if t.startswith("--"):
                    options += 1
                else:
                    problems += 1
    return problems, options


def check(myconv, path):
    problems, options = tokens(path)
    proc = subprocess.run([myconv, "--shapes", path, "--backend", "libtorch_cpu", "--list-cases"],
                          capture_output=True, text=True, timeout=600)
    row = {"file": os.path.basename(path), "tokens": problems, "options": options}
    if proc.returncode != 0:
        row["error"] = (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        return row
    cases = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    notes = proc.stderr.splitlines()
    row["cases"] = len(cases)
    row["repeats"] = sum("run once" in n for n in notes)
    row["options_noted"] = sum("benchdnn option" in n for n in notes)
    row["3d"] = sum("id" in c["params"] for c in cases)
    row["asymmetric"] = sum("ph_r" in c["params"] and "id" not in c["params"] for c in cases)
    row["ok"] = (row["cases"] + row["repeats"] == problems and row["options_noted"] == options)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--myconv", required=True)
    ap.add_argument("--output")
    ap.add_argument("dir")
    a = ap.parse_args(argv)
    if not os.access(a.myconv, os.X_OK):
        print(f"check_benchdnn_shapes.py: error: --myconv: '{a.myconv}' is not an executable",
              file=sys.stderr)
        return 2
    try:
        files = sorted(os.path.join(a.dir, f) for f in os.listdir(a.dir) if f.startswith("shapes_"))
    except OSError as e:
        print(f"check_benchdnn_shapes.py: error: cannot read '{a.dir}': {e.strerror}",
              file=sys.stderr)
        return 2
    rows = [check(a.myconv, f) for f in files]
    out = ["| file | problem tokens | cases | repeats (run once) | options noted | 3D (unsupported) "
           "| asymmetric padding (unsupported) | result |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['file']} | {r['tokens']} | - | - | - | - | - | refused: "
                       f"{r['error'].replace('|', '/')} |")
        else:
            out.append(f"| {r['file']} | {r['tokens']} | {r['cases']} | {r['repeats']} | "
                       f"{r['options_noted']}/{r['options']} | {r['3d']} | {r['asymmetric']} | "
                       f"{'every token accounted for' if r['ok'] else 'MISMATCH'} |")
    passed = sum(1 for r in rows if r.get("ok"))
    out.append("")
    out.append(f"{passed} of {len(rows)} files: every problem token accounted for.")
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
