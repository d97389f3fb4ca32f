#!/usr/bin/env python3
"""The committed reports under results/ match their committed JSON.

For every results/**/report.md made by scripts/analyze_results.py (its "Made by" line names the
command and its inputs):
- the same command, run again into a temporary folder, gives the same report line for line (only
  the --output-dir in the "Made by" line differs; its plots are built, not drawn:
  MYCONV_REPORT_NO_PNG), and every plot the report shows is committed beside it, non-empty;
- independently of the script, every result in the JSON has its row in the report's per-problem
  table with its status and its medians (GPU, CPU, total: `.4g` of the JSON's value);
- index.html beside it is the report as scripts/analysis/html.py renders it, its images present.

Skipped with the reason where git tracks reports the work tree lacks (a copy without results/).
Run: python3 tests/analysis/test_committed_reports.py (CTest: committed_reports).
"""

import contextlib
import glob
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MADE_BY = re.compile(r"^Made by `(python3 scripts/analyze_results\.py [^`]*)` from:$")


def reports():
    return sorted(glob.glob(os.path.join(ROOT, "results", "**", "report.md"), recursive=True))


def tracked_reports_missing():
    """The report.md files git tracks under results/ that the work tree lacks (a copy that left
    results/ out, as the GPU host's: scripts and tests only), or [] where git cannot say."""
    try:
        p = subprocess.run(["git", "-C", ROOT, "ls-files", "--", "results/*report.md"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if p.returncode != 0:
        return []
    return [f for f in p.stdout.splitlines() if not os.path.exists(os.path.join(ROOT, f))]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def made_by(text):
    """(inputs, output_dir) of a report's "Made by" line, or None."""
    for line in text.splitlines()[:5]:
        m = MADE_BY.match(line)
        if m:
            argv = shlex.split(m.group(1))[2:]
            out = argv[argv.index("--output-dir") + 1] if "--output-dir" in argv else None
            inputs = [a for i, a in enumerate(argv)
                      if not a.startswith("--") and (i == 0 or argv[i - 1] != "--output-dir")]
            return inputs, out
    return None


def analyze_results(args):
    """(exit code, stderr) of `python3 scripts/analyze_results.py ARGS` run from the top folder,
    its plots built, not drawn (MYCONV_REPORT_NO_PNG: the text only). In this process where it
    has matplotlib: the script's main() with the command's sys.argv and folder (one interpreter
    and one import of matplotlib and the analysis modules for every report, instead of one per
    report); else as its own process, which may re-run itself under the system's Python for
    matplotlib (analysis.common.maybe_reexec_for_matplotlib)."""
    env = {**os.environ, "MYCONV_REPORT_NO_PNG": "1"}
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        p = subprocess.run([sys.executable, "scripts/analyze_results.py", *args], cwd=ROOT,
                           capture_output=True, text=True, timeout=600, env=env)
        return p.returncode, p.stderr
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import analyze_results as script
    saved = (os.getcwd(), sys.argv, dict(os.environ))
    err = io.StringIO()
    try:
        os.chdir(ROOT)
        sys.argv = ["scripts/analyze_results.py", *args]
        os.environ.update(env)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                rc = script.main(args)
            except SystemExit as e:  # the parser's usage errors
                rc = e.code
    finally:
        os.chdir(saved[0])
        sys.argv = saved[1]
        os.environ.clear()
        os.environ.update(saved[2])
    return rc, err.getvalue()


def fmt(x):
    if x is None:
        return "n/a"
    return "0" if x == 0 else f"{x:.4g}"


def median(r, field):
    v = r.get(field)
    return v.get("median") if isinstance(v, dict) else None


class CommittedReports(unittest.TestCase):
    def setUp(self):
        missing = tracked_reports_missing()
        if missing:
            self.skipTest(f"{len(missing)} committed report(s) are not in this work tree "
                          f"(e.g. {missing[0]}): a copy without results/")

    def test_there_are_reports(self):
        self.assertTrue(reports(), "no results/**/report.md")

    def test_each_report_is_what_its_command_makes_now(self):
        for path in reports():
            with self.subTest(report=os.path.relpath(path, ROOT)):
                text = read(path)
                cmd = made_by(text)
                self.assertIsNotNone(cmd, "no 'Made by' line naming scripts/analyze_results.py")
                inputs, out = cmd
                self.assertEqual(os.path.normpath(os.path.join(ROOT, out)),
                                 os.path.dirname(path), "report not in its --output-dir")
                with tempfile.TemporaryDirectory() as tmp:
                    rc, err = analyze_results([*inputs, "--output-dir", tmp])
                    self.assertEqual(rc, 0, err)
                    again = read(os.path.join(tmp, "report.md"))
                made = [i for i, line in enumerate(text.splitlines()) if MADE_BY.match(line)][0]
                old, new = text.splitlines(), again.splitlines()
                self.assertEqual(len(old), len(new), "report length differs")
                for i, (a, b) in enumerate(zip(old, new)):
                    if i != made:
                        self.assertEqual(a, b, f"line {i + 1} differs")
                for png in re.findall(r"\]\((plots/[^)]+\.png)\)", text):
                    f = os.path.join(os.path.dirname(path), png)
                    self.assertTrue(os.path.isfile(f) and os.path.getsize(f) > 0, png)

    def test_each_index_html_is_its_report_as_a_page(self):
        """index.html beside each report.md is that report through scripts/analysis/html.py,
        and every image it shows is committed."""
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        from analysis.html import report_page
        for path in reports():
            with self.subTest(report=os.path.relpath(path, ROOT)):
                page = os.path.join(os.path.dirname(path), "index.html")
                self.assertTrue(os.path.isfile(page), "no index.html beside the report")
                self.assertEqual(read(page), report_page(read(path)))
                for src in re.findall(r'<img src="([^"]+)"', read(page)):
                    self.assertTrue(os.path.isfile(os.path.join(os.path.dirname(path), src)),
                                    src)

    def test_every_result_has_its_row_with_the_json_medians(self):
        for path in reports():
            text = read(path)
            inputs, _ = made_by(text)
            if len(inputs) != 1:
                continue  # several inputs: rows carry a file column; covered by the test above
            doc = json.loads(read(os.path.join(ROOT, inputs[0])))
            if "## Per problem" not in text:
                # An op, MLP or transformer report (scripts/analysis/{ops,mlp,transformer}_report.py)
                # has its own tables; the test above holds it to its command's output, and the
                # suites' report tests (tests/analysis/test_ops_report.py,
                # test_transformer_report.py) check their figures.
                self.assertTrue(all(r.get("suite") in ("ops", "mlp", "transformer")
                                    for r in doc["results"]), path)
                continue
            with self.subTest(report=os.path.relpath(path, ROOT)):
                rows = {}
                heading = None
                for line in text.split("## Per problem", 1)[1].split("\n## ", 1)[0].splitlines():
                    m = re.match(r"^### (?:.*: )?`([^`]+)` \((\w+), (\w+)", line)
                    if m:
                        heading = m.group(1)
                    elif (line.startswith("| ") and heading and
                          not line.startswith(("| backend ", "| --- "))):
                        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
                        rows[(heading, cells[0])] = cells
                for r in doc["results"]:
                    # A problem measured under several names has a row per name.
                    row = rows.get((r["problem"], f"{r['backend']} ({r.get('name')})"),
                                   rows.get((r["problem"], r["backend"])))
                    self.assertIsNotNone(row, f"no row for {r['problem']} {r['backend']}")
                    self.assertEqual(row[2], r["status"], r["problem"])
                    self.assertEqual(row[3:6], [fmt(median(r, "gpu_time_ms")),
                                                fmt(median(r, "cpu_time_ms")),
                                                fmt(median(r, "total_time_ms"))],
                                     f"{r['problem']} {r['backend']}")
                self.assertEqual(len(rows), len(doc["results"]), "rows without a result")


if __name__ == "__main__":
    # The interpreter the script itself would make the reports with: one with matplotlib (the
    # system's, where this one lacks it), so that analyze_results() runs them in this process.
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from analysis.common import maybe_reexec_for_matplotlib
    maybe_reexec_for_matplotlib()
    unittest.main(verbosity=2)
