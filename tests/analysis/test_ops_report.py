#!/usr/bin/env python3
"""Tests of the op suite's report (scripts/analyze_results.py on results of suite "ops", written by
scripts/analysis/ops_report.py) from a hand-made fixture
(tests/analysis/fixtures/ops_results.json): bands, efficiencies against the measured copy
bandwidth, suggestions that follow the numbers, the issue's targets met or missed, the cases that
did not pass, the check of `metrics`, the plots, and the refusal of mixed suites.

Run: python3 tests/analysis/test_ops_report.py (CTest: ops_report).

The fixture's numbers, for reading the assertions (measured copy bandwidth: cuda 2900 GB/s, cpu
40 GB/s; matmul ceiling fp32 51, bf16 730 TFLOP/s; GPU medians in ms, PyTorch = libtorch_cuda):
  add:4096x4096 fp32 (201326592 bytes): own_cuda 0.074 (2721 GB/s, 93.8%), PyTorch 0.076
    (ratio 1.03, excellent); cublaslt unsupported.
  add:4096x4096:bf16: own 0.04 (86.8%), PyTorch 0.039 (0.975, excellent).
  gelu_tanh:4096x4096: own 0.05 (92.6%), PyTorch 0.06 (1.2).
  softmax:256x256: own 0.008, PyTorch 0.005 (0.625, fair; under 10 us: launch-bound).
  layernorm:4096x4096: own incorrect, PyTorch 0.056.
  transpose:8192x8192 fp32 (536870912 bytes): own 0.4628 (1160 GB/s = 40.0%: the planted slow
    kernel), PyTorch 0.21 (88.2%); ratio 0.454, poor, inefficient kernel.
  sum:4x512x896:axis=2: own 0.006, PyTorch 0.0066 (1.1); sum:4x512x896: own 0.009, PyTorch
    0.0075 (0.833, good).
  matmul 4096^3 bf16: own 0.26 (528.6 TFLOP/s, 72.4% of 730), cublaslt 0.2 (own/cublaslt 0.769),
    PyTorch 0.205; fp32: own 4.0 (34.36 TFLOP/s, 67.4% of 51), cublaslt 2.9 (0.725), PyTorch 2.95.
  add:2048x2048 on the CPU (total medians): libtorch_cpu 2.0, onednn_cpu 1.6 (31.46 GB/s = 78.6%
    of 40, ratio 1.25).
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "analyze_results.py")
FIXTURE = os.path.join(ROOT, "tests", "analysis", "fixtures", "ops_results.json")
CONV_FIXTURE = os.path.join(ROOT, "tests", "analysis", "fixtures", "analyze_small.json")
PLOTS = ["efficiency.png", "speedup_own_cuda.png", "speedup_cublaslt.png",
         "speedup_onednn_cpu.png", "matmul_roofline.png"]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def load(path):
    return json.loads(read(path))


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=300)


def section(text, title):
    """The text of the Markdown section that starts with the heading `title`."""
    start = text.index(title)
    level = title.split(" ")[0]
    rest = text[start + len(title):]
    m = re.search(r"^#{1," + str(len(level)) + "} ", rest, re.M)
    return rest[:m.start()] if m else rest


def rows(text, first=None):
    """Cells of the Markdown table rows (header and rule lines left out)."""
    out = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| ---"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if first is None or cells[0] == first:
                out.append(cells)
    return out


def report_of(doc, folder):
    """Writes doc to folder/in.json, makes its report there; (process, report text)."""
    path = os.path.join(folder, "in.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    proc = run(path, "--output-dir", folder)
    out = os.path.join(folder, "report.md")
    return proc, read(out) if os.path.exists(out) else ""


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ops_report_")
        cls.proc = run(FIXTURE, "--output-dir", cls.dir)
        path = os.path.join(cls.dir, "report.md")
        cls.report = read(path) if os.path.exists(path) else ""

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def detail(self, category, problem, backend):
        table = rows(section(self.report, f"### {category}"))
        header = table[0]
        found = [dict(zip(header, r)) for r in table[1:] if r[0] == problem and r[1] == backend]
        self.assertEqual(len(found), 1, (category, problem, backend))
        return found[0]

    def test_runs_and_says_how_it_was_made(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertTrue(self.report.startswith("# myops results report\n"))
        self.assertIn(f"Made by `python3 {SCRIPT} {FIXTURE} --output-dir {self.dir}` from:",
                      self.report)

    def test_measured_limits(self):
        s = section(self.report, "## System and measured limits")
        cuda = rows(s, "cuda 0")[0]
        self.assertEqual(cuda[2:5], ["2900", "3352", "86.5%"])  # 2900 / 3352.32
        self.assertEqual(rows(s, "cpu")[0][2], "40")
        self.assertEqual(rows(s, "bf16")[0][1:], ["730", "989.4", "73.8%"])
        self.assertIn("| host | fixture-h100 |", s)

    def test_bands_ratios_and_limits(self):
        t = self.detail("memory", "transpose:8192x8192", "own_cuda")
        self.assertEqual((t["ratio"], t["band"], t["limit"]), ("0.454x", "poor",
                                                               "inefficient kernel"))
        self.assertEqual((t["PyTorch ms"], t["ms"], t["GB/s"]), ("0.21", "0.4628", "1160"))
        s = self.detail("normalization", "softmax:256x256", "own_cuda")
        self.assertEqual((s["ratio"], s["band"], s["limit"]), ("0.625x", "fair", "launch-bound"))
        a = self.detail("element", "add:4096x4096", "own_cuda")
        self.assertEqual((a["ratio"], a["band"], a["limit"]), ("1.03x", "excellent", ""))
        self.assertEqual(self.detail("reduction", "sum:4x512x896", "own_cuda")["band"], "good")
        m = self.detail("matmul", "matmul:m4096n4096k4096", "own_cuda")
        self.assertEqual((m["ratio"], m["band"], m["TFLOP/s"], m["% of ceiling"]),
                         ("0.738x", "good", "34.36", "67.4%"))
        ref = self.detail("element", "add:4096x4096", "libtorch_cuda")
        self.assertEqual((ref["ratio"], ref["band"]), ("1x (reference)", "-"))

    def test_efficiency_against_the_measured_bandwidth_of_the_device(self):
        self.assertEqual(self.detail("memory", "transpose:8192x8192", "own_cuda")["efficiency"],
                         "40%")
        self.assertEqual(self.detail("element", "add:4096x4096:bf16", "own_cuda")["efficiency"],
                         "86.8%")
        # A CPU backend against the CPU's copy bandwidth: 50331648 bytes / 1.6 ms / 40 GB/s.
        cpu = self.detail("element", "add:2048x2048", "onednn_cpu")
        self.assertEqual((cpu["GB/s"], cpu["efficiency"], cpu["ratio"]),
                         ("31.46", "78.6%", "1.25x"))

    def test_summary_per_backend(self):
        s = section(self.report, "## Summary per backend")
        header = rows(s)[0]
        own = dict(zip(header, rows(s, "own_cuda")[0]))
        self.assertEqual((own["cases"], own["passed"], own["not passed"], own["success rate"]),
                         ("10", "9", "1 incorrect", "90%"))
        self.assertEqual([own[b] for b in ("excellent", "good", "fair", "poor", "critical")],
                         ["4", "3", "1", "1", "0"])
        # The geometric mean of own_cuda's nine ratios, from the fixture's GPU medians.
        doc = load(FIXTURE)
        gpu = {(r["backend"], r["problem"]): r["gpu_time_ms"]["median"] for r in doc["results"]
               if r["status"] == "passed" and r["device"] == "cuda"}
        ratios = [gpu[("libtorch_cuda", p)] / t for (b, p), t in gpu.items() if b == "own_cuda"]
        self.assertEqual(len(ratios), 9)
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        self.assertEqual(own["geomean ratio"], f"{geo:.3g}x")
        self.assertEqual(dict(zip(header, rows(s, "cublaslt")[0]))["success rate"], "66.7%")
        self.assertEqual(dict(zip(header, rows(s, "libtorch_cuda")[0]))["mean ratio"],
                         "(reference)")

    def test_per_category(self):
        s = section(self.report, "## Per category")
        memory = [r for r in rows(s, "memory") if r[1] == "own_cuda"][0]
        self.assertEqual(memory[2:6], ["1/1", "0.454x", "0.454x", "40%"])
        matmul = [r for r in rows(s, "matmul") if r[1] == "own_cuda"][0]
        self.assertEqual(matmul[6], "69.9%")  # median of 67.4% and 72.4%

    def test_suggestion_for_the_planted_slow_transpose(self):
        s = section(self.report, "## Suggestions")
        self.assertIn("own_cuda transpose reaches 40% of the measured copy bandwidth at "
                      "8192x8192 fp32 (PyTorch 88.2%, ratio 0.454x (poor)): tile it", s)
        self.assertIn("own_cuda softmax is below PyTorch at small sizes (0.625x at 256x256 fp32, "
                      "8 us per call): launch-bound", s)
        self.assertIn("own_cuda matmul 4096x4096x4096 (mxnxk) fp32 reaches 67.4% of the measured "
                      "fp32 ceiling", s)
        self.assertIn("fix correctness first: 1 incorrect case(s): `layernorm:4096x4096`", s)
        for fast in ("gelu_tanh", "onednn_cpu", "bf16 ceiling"):
            self.assertNotIn(fast, s)

    def test_best_and_worst(self):
        s = section(self.report, "### own_cuda")
        self.assertEqual(rows(s, "best")[0][1:4], ["gelu_tanh:4096x4096", "fp32", "1.2x"])
        self.assertEqual(rows(s, "worst")[0][1:4], ["transpose:8192x8192", "fp32", "0.454x"])
        listed = [r[1] for r in rows(s, "best") + rows(s, "worst")]
        self.assertEqual(len(listed), len(set(listed)), "a case listed twice")

    def test_targets_met_and_missed(self):
        s = section(self.report, "## Targets")
        table = {r[0]: r for r in rows(s)}
        tr = table["own_cuda transpose 8192x8192 fp32 reaches >= 80% of the measured copy "
                   "bandwidth"]
        self.assertEqual(tr[2:5], ["40% at `transpose:8192x8192` (pure:graph)", "80%",
                                   "**missed**"])
        self.assertIn("40 points short", tr[5])
        self.assertEqual(table["own_cuda >= 1.0x PyTorch on element ops at >= 4M elements, "
                               "fp32"][4], "met")
        bf16 = table["own_cuda >= 1.0x PyTorch on element ops at >= 4M elements, bf16"]
        self.assertEqual((bf16[4], bf16[5]), ("**missed**", "2.5% short; 1 of 1 below"))
        bw = table["own_cuda element ops at >= 16M elements reach >= 90% of the measured copy "
                   "bandwidth"]
        self.assertEqual((bw[1], bw[4]), ("2", "**missed**"))
        self.assertIn("3.22 points short", bw[5])  # 90% - 86.78%
        self.assertEqual(table["own_cuda matmul 4096x4096x4096 bf16 >= 0.7x cublaslt"][2:5],
                         ["0.769x at `matmul:m4096n4096k4096:bf16` (pure:graph)", "0.7x", "met"])
        fp32 = table["own_cuda matmul 4096x4096x4096 fp32 >= 0.8x cublaslt"]
        self.assertEqual((fp32[4], fp32[5]), ("**missed**", "9.38% short; 1 of 1 below"))
        red = table["own_cuda reductions at 4x512x896 no slower than PyTorch (>= 1.0x)"]
        self.assertEqual((red[1], red[4]), ("2", "**missed**"))
        norm = table["own_cuda >= 1.0x PyTorch on normalization ops at >= 4M elements, fp32"]
        self.assertEqual(norm[4], "**missed**")
        self.assertIn("(incorrect)", norm[5])
        self.assertIn("Not in these data:", s)
        self.assertIn("reductions at 64x4096x4096", s.split("Not in these data:")[1])

    def test_cases_that_did_not_pass_are_listed(self):
        s = section(self.report, "## Cases that did not pass")
        wrong = rows(s, "own_cuda")[0]
        self.assertEqual(wrong[1:4], ["layernorm:4096x4096", "fp32", "incorrect"])
        self.assertIn("rel L2 err 0.0021", wrong[4])
        self.assertIn("12 of 16777216 elements outside", wrong[4])
        # A backend that could not run: one line per backend and reason, not a row per case.
        self.assertEqual(rows(s, "cublaslt"), [])
        self.assertIn("- `cublaslt` unsupported, 1 case(s): cuBLASLt runs matmul only", s)
        # Also in the detailed table, with the status as its band.
        self.assertEqual(self.detail("normalization", "layernorm:4096x4096", "own_cuda")["band"],
                         "incorrect")

    def test_metrics_agree(self):
        self.assertIn("agree with the recomputed figures", section(self.report, "## Notes"))

    def test_plots_are_written(self):
        if "No plots: matplotlib is not importable" in self.report:
            self.skipTest("matplotlib is not installed (python3-matplotlib)")
        for name in PLOTS:
            path = os.path.join(self.dir, "plots", name)
            self.assertTrue(os.path.isfile(path), name)
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", name)
            self.assertGreater(os.path.getsize(path), 1000, name)
            self.assertIn(f"(plots/{name})", self.report)
        self.assertEqual([f for f in os.listdir(os.path.join(self.dir, "plots"))
                          if f.endswith(".tmp")], [])


class FromTheData(unittest.TestCase):
    """Changed copies of the fixture: what the report says follows the numbers."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ops_report_")
        self.doc = load(FIXTURE)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def result(self, backend, problem):
        return next(r for r in self.doc["results"]
                    if r["backend"] == backend and r["problem"] == problem)

    def test_a_fast_transpose_gets_no_suggestion_and_meets_its_target(self):
        r = self.result("own_cuda", "transpose:8192x8192")
        r["gpu_time_ms"]["median"] = 0.2  # 2684 GB/s = 92.6%, ratio 1.05
        del r["metrics"]
        proc, report = report_of(self.doc, self.dir)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("transpose reaches", section(report, "## Suggestions"))
        targets = {r[0]: r for r in rows(section(report, "## Targets"))}
        self.assertEqual(targets["own_cuda transpose 8192x8192 fp32 reaches >= 80% of the "
                                 "measured copy bandwidth"][4], "met")
        self.assertIn("1 passed case(s) carry no `metrics`", section(report, "## Notes"))

    def test_a_broken_metrics_writer_is_noted(self):
        m = self.result("own_cuda", "gelu_tanh:4096x4096")["metrics"]
        m["bandwidth_gbs"] = 2000.0                 # recomputed: 2684
        m["speedup_vs_pytorch"] *= 1.005            # within 1%: not a note
        self.result("own_cuda", "softmax:256x256")["metrics"]["score_band"] = "good"
        proc, report = report_of(self.doc, self.dir)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        notes = section(report, "## Notes")
        self.assertIn("own_cuda `gelu_tanh:4096x4096` (pure:graph): metrics.bandwidth_gbs 2000, "
                      "recomputed 2684 (25.5% apart)", notes)
        self.assertIn("metrics.score_band good, recomputed fair", notes)
        self.assertNotIn("speedup_vs_pytorch", notes)
        self.assertIn("disagree with the recomputed figures in 2 place(s)",
                      section(report, "## Suggestions"))

    def test_graph_and_back_to_back_are_both_pure(self):
        self.result("own_cuda", "add:4096x4096")["timing_mode"] = "pure:back-to-back"
        self.result("libtorch_cuda", "add:4096x4096:bf16")["timing_mode"] = "real"
        proc, report = report_of(self.doc, self.dir)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        table = rows(section(report, "### element"))
        cells = {(r[0], r[1]): dict(zip(table[0], r)) for r in table[1:]}
        self.assertEqual(cells[("add:4096x4096", "own_cuda")]["ratio"], "1.03x")
        # Against a PyTorch time taken in real mode: no ratio.
        bf16 = cells[("add:4096x4096:bf16", "own_cuda")]
        self.assertEqual((bf16["PyTorch ms"], bf16["ratio"], bf16["band"]), ("n/a", "n/a", "-"))

    def test_without_measured_limits(self):
        self.doc["system"]["bandwidth"] = {"why": "not measured (--no-peaks)"}
        del self.doc["system"]["matmul_ceiling"]
        proc, report = report_of(self.doc, self.dir)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("The cuda copy bandwidth was not measured: not measured (--no-peaks)",
                      report)
        table = rows(section(report, "### memory"))
        own = dict(zip(table[0], [r for r in table if r[1] == "own_cuda"][0]))
        self.assertEqual((own["GB/s"], own["efficiency"], own["ratio"]), ("1160", "n/a", "0.454x"))

    def test_no_passed_case(self):
        self.doc["results"] = [r for r in self.doc["results"] if r["status"] != "passed"]
        proc, report = report_of(self.doc, self.dir)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("## No passed case", report)
        self.assertIn("No plots: no passed case.", report)
        s = section(report, "## Cases that did not pass")
        self.assertEqual(len(rows(s)), 2)  # the incorrect and failed cases; the unsupported one:
        self.assertIn("- `cublaslt` unsupported, 1 case(s):", s)


class Suites(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ops_report_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def expect_refused(self, args, words):
        out = os.path.join(self.dir, "out")
        proc = run(*args, "--output-dir", out)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        for w in words:
            self.assertIn(w, lines[0])
        self.assertFalse(os.path.exists(os.path.join(out, "report.md")))

    def test_mixed_suites_are_refused(self):
        ops, conv = load(FIXTURE), load(CONV_FIXTURE)
        mixed = dict(ops, results=ops["results"] + conv["results"])
        path = os.path.join(self.dir, "mixed.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(mixed, f)
        self.expect_refused([path], ["several suites", "conv, ops"])
        self.expect_refused([CONV_FIXTURE, FIXTURE], ["different suites"])

    def test_the_suite_picks_the_report(self):
        proc = run(CONV_FIXTURE, "--output-dir", self.dir)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertTrue(read(os.path.join(self.dir, "report.md")).startswith(
            "# myconv results report\n"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
