#!/usr/bin/env python3
"""Tests of scripts/analyze_results.py: the report from a small hand-made fixture
(tests/analysis/fixtures/analyze_small.json) holds the expected numbers, the plots exist,
--compare tells a planted 2x slowdown from noise, bad input exits 2 without writing, and a real
result file from the H200 (results/h200/20261123_conv_default_grid/results.json) goes through.

Run: python3 tests/analysis/test_analyze_results.py (CTest: analyze_results).

The fixture's numbers, for reading the assertions:
  in64_k5 (mb2ic4ih64oc8kh5, fp32): GPU medians im2col_gemm_cuda 0.016, cudnn 0.032,
    libtorch_cuda 0.02 ms; total medians libtorch_cpu 0.2, halide_cpu 0.05 ms; compile times
    im2col 0.01, halide_cpu 600 ms; onednn_cpu failed, halide_cuda unsupported.
  res2_3x3 (mb32ic64ih56oc64kh3ph1, fp32): im2col incorrect, cudnn 0.2 (throttled),
    libtorch_cuda 0.24, halide_cuda 0.3 ms.
  res2_3x3 fp16 nhwc: cudnn 0.04, libtorch_cuda 0.05 ms, halide_cuda timeout.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "analyze_results.py")
FIXTURE = os.path.join(ROOT, "tests", "analysis", "fixtures", "analyze_small.json")
REAL = os.path.join(ROOT, "results", "h200", "20261123_conv_default_grid", "results.json")
PLOTS = ["heatmap.png", "times.png", "compile_times.png", "roofline.png"]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def load(path):
    return json.loads(read(path))


def dump(doc, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          timeout=300)


def table_rows(text, first_cell):
    """Cells of the Markdown table rows whose first cell is first_cell."""
    rows = []
    for line in text.splitlines():
        if line.startswith("| "):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if cells[0] == first_cell:
                rows.append(cells)
    return rows


def section(text, title):
    """The text of the Markdown section that starts with the heading `title`."""
    start = text.index(title)
    level = title.split(" ")[0]
    rest = text[start + len(title):]
    m = re.search(r"^" + "#" + "{1," + str(len(level)) + "} ", rest, re.M)
    return rest[:m.start()] if m else rest


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="analyze_")
        cls.proc = run(FIXTURE, "--output-dir", cls.dir)
        path = os.path.join(cls.dir, "report.md")
        cls.report = read(path) if os.path.exists(path) else ""

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_runs(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertIn("analyze_small.json", self.report)
        self.assertIn("Made by `python3 ", self.report)

    def test_system_and_versions(self):
        self.assertIn("| host | fixture-host |", self.report)
        self.assertIn("| cudnn | cuDNN 9.19.0 |", self.report)
        self.assertIn("NVIDIA H200", self.report)

    def test_attention_lists_incorrect_failed_timeout_throttled(self):
        s = section(self.report, "## Needs attention")
        self.assertEqual(table_rows(s, "im2col_gemm_cuda")[0][4], "incorrect")
        self.assertEqual(table_rows(s, "onednn_cpu")[0][4], "failed")
        self.assertEqual(table_rows(s, "halide_cuda")[0][4], "timeout")
        throttled = table_rows(s, "cudnn")[0]
        self.assertEqual(throttled[5], "yes")
        self.assertIn("1980 -> 1155 MHz", throttled[6])
        self.assertEqual(len(table_rows(s, "libtorch_cuda")), 0)

    def test_winners(self):
        s = section(self.report, "## Winners")
        row = table_rows(s, "in64_k5 fp32")[0]
        self.assertEqual(row[2:5], ["im2col_gemm_cuda", "cuda", "0.016"])
        self.assertEqual(row[6], "im2col_gemm_cuda (0.016 ms)")
        self.assertEqual(row[7], "halide_cpu (0.05 ms)")
        # The incorrect backend never wins; the throttled cuDNN case is still the fastest.
        self.assertEqual(table_rows(s, "res2_3x3 fp32")[0][2], "cudnn")
        self.assertEqual(table_rows(s, "res2_3x3 fp16 nhwc")[0][2], "cudnn")
        # Wins per backend: problems run (not unsupported), fastest overall, on its device.
        self.assertEqual(table_rows(s, "im2col_gemm_cuda")[0][1:], ["cuda", "2", "1", "1"])
        self.assertEqual(table_rows(s, "cudnn")[0][1:], ["cuda", "3", "2", "2"])
        self.assertEqual(table_rows(s, "halide_cuda")[0][1:], ["cuda", "2", "0", "0"])
        self.assertEqual(table_rows(s, "halide_cpu")[0][1:], ["cpu", "1", "0", "1"])
        self.assertEqual(table_rows(s, "onednn_cpu")[0][1:], ["cpu", "1", "0", "0"])

    def test_per_problem_table_and_speedups(self):
        s = section(self.report, "### in64_k5: `mb2ic4ih64oc8kh5` (fp32, nchw)")
        ours = table_rows(s, "im2col_gemm_cuda")[0]
        # backend device status GPU CPU total compile first speed-up GFLOP/s %roof correct relL2
        self.assertEqual(ours[1:9], ["cuda", "passed", "0.016", "0.0054", "0.022", "0.01", "1.05",
                                     "1.25x"])
        self.assertEqual(ours[9], "720")  # 11.52 MFLOP / 0.016 ms
        self.assertEqual(table_rows(s, "cudnn")[0][8], "0.625x")
        self.assertEqual(table_rows(s, "halide_cpu")[0][8], "4x")  # against libtorch_cpu
        self.assertEqual(table_rows(s, "libtorch_cpu")[0][8], "1x")
        self.assertEqual(table_rows(s, "onednn_cpu")[0][2], "failed")
        self.assertIn("Winner: **im2col_gemm_cuda** (cuda), GPU median 0.016 ms", s)
        s2 = section(self.report, "### res2_3x3: `mb32ic64ih56oc64kh3ph1` (fp32, nchw)")
        wrong = table_rows(s2, "im2col_gemm_cuda")[0]
        self.assertEqual((wrong[2], wrong[8], wrong[11], wrong[12]), ("incorrect", "n/a", "NO",
                                                                      "0.5"))
        self.assertIn("THROTTLED", table_rows(s2, "cudnn")[0][-1])

    def test_compile_overhead(self):
        s = section(self.report, "## Compile overhead")
        rows = {(r[0], r[1]): r for r in table_rows(s, "in64_k5 fp32")}
        # compile / (reference - own): 0.01 / (0.02 - 0.016) = 2.5; 600 / (0.2 - 0.05) = 4000.
        self.assertEqual(rows[("in64_k5 fp32", "im2col_gemm_cuda")][7], "2.5")
        self.assertEqual(rows[("in64_k5 fp32", "im2col_gemm_cuda")][4], "0.625")
        self.assertEqual(rows[("in64_k5 fp32", "halide_cpu")][7], "4000")
        self.assertEqual(rows[("in64_k5 fp32", "halide_cpu")][4], "1.2e+04")
        self.assertEqual(rows[("in64_k5 fp32", "cudnn")][7], "never")
        self.assertEqual(rows[("in64_k5 fp32", "libtorch_cuda")][7], "(reference)")

    def test_ratio_tables(self):
        fp32 = section(self.report, "### fp32")
        self.assertEqual(table_rows(fp32, "in64_k5 fp32")[0][2:], ["0.5", "unsupported", "0.625"])
        self.assertEqual(table_rows(fp32, "res2_3x3 fp32")[0][2:], ["incorrect", "1.5", "1.2"])
        fp16 = section(self.report, "### fp16")
        # ours (im2col_gemm_cuda) ran no fp16 problem: a line under the table, not a column.
        self.assertEqual(table_rows(fp16, "res2_3x3 fp16 nhwc")[0][2:], ["timeout", "1.25"])
        self.assertIn("- `im2col_gemm_cuda` unsupported, 1 case(s): not implemented yet: fp16",
                      fp16)
        self.assertNotIn("### tf32", self.report)

    def test_roofline_ceilings_from_system(self):
        s = section(self.report, "## Roofline")
        self.assertIn("4800 GB/s (`peak_bandwidth_gbps`)", s)
        self.assertIn("fp32 peak 66.9 TFLOP/s (`peak_fp32_tflops`)", s)
        # res2_3x3 cudnn: 7.399 TFLOP / 0.2 ms = 36.99 TFLOP/s of min(66.9, 4800 GB/s x 143.6).
        s2 = section(self.report, "### res2_3x3: `mb32ic64ih56oc64kh3ph1` (fp32, nchw)")
        self.assertEqual(table_rows(s2, "cudnn")[0][10], "55.3")

    def test_plots_exist(self):
        if "No plots: matplotlib is not importable" in self.report:
            self.skipTest("matplotlib is not installed (python3-matplotlib)")
        for name in PLOTS:
            path = os.path.join(self.dir, "plots", name)
            self.assertTrue(os.path.isfile(path), name)
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", name)
            self.assertGreater(os.path.getsize(path), 1000, name)
            self.assertIn(f"(plots/{name})", self.report)

    def test_index_html_shows_every_plot_in_a_browser(self):
        """index.html loaded by headless Chromium (Debian's chromium, scripts/setup.sh
        --tests): every image of the page decoded (naturalWidth > 0). A copy of the page with a
        small script that writes each image's naturalWidth into the DOM once the page loaded;
        --dump-dom prints it."""
        if "No plots: matplotlib is not importable" in self.report:
            self.skipTest("matplotlib is not installed (python3-matplotlib)")
        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        if not browser:
            self.skipTest("chromium is not installed (Debian: apt-get install chromium)")
        page = read(os.path.join(self.dir, "index.html"))
        n_img = page.count("<img ")
        self.assertEqual(n_img, self.report.count("!["))
        self.assertGreater(n_img, 0)
        probe = os.path.join(self.dir, "probe.html")
        with open(probe, "w", encoding="utf-8") as f:
            f.write(page.replace("</body>", "<script>window.addEventListener('load', () => "
                                 "document.body.setAttribute('data-widths', Array.from("
                                 "document.images).map(i => i.naturalWidth).join(',')));"
                                 "</script></body>"))
        with tempfile.TemporaryDirectory() as profile:
            p = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                                f"--user-data-dir={profile}", "--allow-file-access-from-files",
                                "--virtual-time-budget=10000", "--dump-dom",
                                "file://" + probe], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        m = re.search(r'data-widths="([^"]*)"', p.stdout)
        self.assertIsNotNone(m, "the page's load event did not run: " + p.stdout[:300])
        widths = [int(w) for w in m.group(1).split(",") if w]
        self.assertEqual(len(widths), n_img)
        self.assertTrue(all(w > 0 for w in widths), f"images not loaded: {widths}")

    def test_no_temporary_files_left(self):
        for folder in (self.dir, os.path.join(self.dir, "plots")):
            self.assertEqual([f for f in os.listdir(folder) if f.endswith(".tmp")], [])


class EdgeCases(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="analyze_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_no_passed_case_gives_a_report(self):
        doc = load(FIXTURE)
        doc["results"] = [r for r in doc["results"] if r["status"] != "passed"]
        path = self.write("none_passed.json", json.dumps(doc))
        proc = run(path)  # default output folder: the input's
        self.assertEqual(proc.returncode, 0, proc.stderr)
        report = read(os.path.join(self.dir, "report.md"))
        self.assertIn("## No passed case", report)
        self.assertIn("| onednn_cpu |", report)  # the failed case is still listed
        empty = self.write("empty.json", '{"schema_version": 1, "system": {}, "results": []}')
        out = os.path.join(self.dir, "empty_out")
        proc = run(empty, "--output-dir", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("No passed case", read(os.path.join(out, "report.md")))

    def test_a_run_without_a_gpu_is_not_padded(self):
        """The fixture as a CPU-only host would record it: every GPU backend skipped. The ratios
        against cuDNN collapse to one line per backend, no empty roofline frame is drawn, and
        the page carries no image of it."""
        doc = load(FIXTURE)
        for r in doc["results"]:
            if r.get("device") == "cuda":
                r.update(status="skipped", reason="no NVIDIA driver found", gpu_time_ms=None)
        path = self.write("results.json", json.dumps(doc))
        proc = run(path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        report = read(os.path.join(self.dir, "report.md"))
        s = section(report, "## Ratios against cuDNN")
        self.assertIn("No ratio: `cudnn` has no passed case in these files.", s)
        self.assertIn("- `cudnn` skipped, 3 case(s): no NVIDIA driver found", s)
        self.assertNotIn("| ", s)
        if "No plots: matplotlib is not importable" not in report:
            self.assertFalse(os.path.exists(os.path.join(self.dir, "plots", "roofline.png")))
            self.assertNotIn("plots/roofline.png", report)
            self.assertNotIn("roofline.png", read(os.path.join(self.dir, "index.html")))

    def test_a_backend_not_run_on_any_problem_is_a_line_not_a_column(self):
        doc = load(FIXTURE)
        n = 0  # halide_cuda's fp32 cases
        for r in doc["results"]:
            if r["backend"] == "halide_cuda":
                r.update(status="skipped", reason="built without Halide", gpu_time_ms=None)
                n += r.get("dtype", "fp32") == "fp32"
        path = self.write("results.json", json.dumps(doc))
        proc = run(path, "--report-only")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        s = section(read(os.path.join(self.dir, "report.md")), "## Ratios against cuDNN")
        s = section(s, "### fp32")
        self.assertIn("| problem | descriptor | ours/cuDNN | LibTorch/cuDNN |", s)
        self.assertNotIn("Halide/cuDNN", s)
        self.assertIn(f"- `halide_cuda` skipped, {n} case(s): built without Halide", s)

    def test_without_matplotlib_the_report_says_so(self):
        # A matplotlib that fails to import, and no second try with /usr/bin/python3.
        fake = os.path.join(self.dir, "fake", "matplotlib")
        os.makedirs(fake)
        self.write(os.path.join("fake", "matplotlib", "__init__.py"),
                   "raise ImportError('planted by the test')\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(fake), MYCONV_ANALYZE_REEXEC="1")
        out = os.path.join(self.dir, "out")
        proc = subprocess.run([sys.executable, SCRIPT, FIXTURE, "--output-dir", out], env=env,
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("planted by the test", proc.stderr)
        report = read(os.path.join(out, "report.md"))
        self.assertIn("No plots: matplotlib is not importable", report)
        self.assertIn("| in64_k5 fp32 | mb2ic4ih64oc8kh5 | im2col_gemm_cuda |", report)

    def expect_bad_input(self, args, word):
        out = os.path.join(self.dir, "out")
        proc = run(*args, "--output-dir", out) if "--compare" not in args else run(*args)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn(word, lines[0])
        self.assertFalse(os.path.exists(os.path.join(out, "report.md")))

    def test_bad_input_exits_2_without_writing(self):
        self.expect_bad_input([os.path.join(self.dir, "missing.json")], "cannot read")
        self.expect_bad_input([self.write("bad.json", "not json {")], "is not JSON")
        self.expect_bad_input([self.write("v3.json", '{"schema_version": 3, "results": []}')],
                              "schema_version 3")
        v1_bad = '{"schema_version": 1, "results": [{"backend": "x", "problem": "mb2zz", ' \
                 '"status": "passed"}]}'
        self.expect_bad_input([self.write("v1bad.json", v1_bad)], "not a version-1 descriptor")
        self.expect_bad_input([self.write("rec.json", '{"schema_version": 1, "results": [1]}')],
                              "results[0]")
        # A good file before a bad one: still nothing written.
        self.expect_bad_input([FIXTURE, os.path.join(self.dir, "missing.json")], "cannot read")
        self.expect_bad_input(["--compare", FIXTURE, os.path.join(self.dir, "missing.json")],
                              "cannot read")

    def test_schema_version_1_is_read_as_2(self):
        # A version-1 file: PyTorch's dilation in the descriptor (dh2 = dilated once) and width
        # fields following their height partners one by one. The report shows version 2's form.
        doc = load(FIXTURE)
        doc["schema_version"] = 1
        for r in doc["results"]:
            if r["problem"] == "mb2ic4ih64oc8kh5":
                r["problem"] = "mb2ic4ih64oc8kh5sw2dh2"
                r["params"].update(sw=2, dh=2, dw=2)
        path = os.path.join(self.dir, "v1.json")
        dump(doc, path)
        proc = run(path, "--output-dir", self.dir)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        report = read(os.path.join(self.dir, "report.md"))
        self.assertIn(f"`{path}`: schema_version 1, read as 2", report)
        self.assertIn("mb2ic4ih64iw64oc8kh5kw5sw2dh1dw1", report)
        self.assertNotIn("kh5sw2dh2", report)

    def test_real_h200_file(self):
        # A copy without results/h200 (the GPU host's, whose .git may predate the file) or a
        # checkout that tracks the file but left it out of its work tree: skipped.
        if not os.path.exists(REAL) and (not os.path.isdir(os.path.dirname(os.path.dirname(REAL)))
                                         or subprocess.run(
                ["git", "-C", ROOT, "ls-files", "--error-unmatch", os.path.relpath(REAL, ROOT)],
                capture_output=True).returncode == 0):
            self.skipTest(f"{os.path.relpath(REAL, ROOT)} is committed but not in this work tree "
                          "(a copy without results/)")
        proc = run(REAL, "--output-dir", self.dir)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        report = read(os.path.join(self.dir, "report.md"))
        self.assertIn("NVIDIA H200", report)
        self.assertIn("onednn_cpu", report)
        # LibTorch/cuDNN on in32_k3 fp32 (gpu_time_ms medians in the file; 1.752 in its report).
        doc = load(REAL)
        gpu = {r["backend"]: r["gpu_time_ms"]["median"] for r in doc["results"]
               if r["problem"] == "mb2ic4ih32oc8kh3" and r["device"] == "cuda"
               and r["status"] == "passed"}
        expected = f"{gpu['libtorch_cuda'] / gpu['cudnn']:.4g}"
        fp32 = section(report, "### fp32")
        self.assertEqual(table_rows(fp32, "in32_k3 fp32")[0][4], expected)


class Compare(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="analyze_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def verdicts(self, text):
        out = {}
        for line in text.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if line.startswith("| ") and len(cells) == 11 and cells[0] != "backend" \
                    and cells[0] != "---":
                out[(cells[0], cells[1])] = cells[9].strip("*")
        return out

    def test_identical_files_are_all_same(self):
        proc = run("--compare", FIXTURE, FIXTURE)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        v = self.verdicts(proc.stdout)
        self.assertEqual(len(v), 15)
        self.assertEqual(set(v.values()), {"same"})

    def slowed(self, factor, backend="cudnn", problem="mb2ic4ih64oc8kh5", spread=None):
        doc = load(FIXTURE)
        for r in doc["results"]:
            if r["backend"] == backend and r["problem"] == problem:
                for figure in ("gpu_time_ms", "total_time_ms", "cpu_time_ms"):
                    s = r[figure]
                    for k in ("median", "min", "mean", "max", "p10", "p90", "stddev"):
                        s[k] *= factor
                    if spread is not None:
                        s["p10"], s["p90"] = s["median"] * (1 - spread), s["median"] * (1 + spread)
        return doc

    def test_planted_slowdown_is_slower(self):
        new = os.path.join(self.dir, "new.json")
        dump(self.slowed(2.0), new)
        out = os.path.join(self.dir, "cmp.md")
        proc = run("--compare", FIXTURE, new, "--output", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        v = self.verdicts(proc.stdout)
        self.assertEqual(v[("cudnn", "mb2ic4ih64oc8kh5")], "slower")
        self.assertEqual([k for k, x in v.items() if x != "same"], [("cudnn", "mb2ic4ih64oc8kh5")])
        self.assertEqual(read(out), proc.stdout)
        # The other way round it is faster.
        v = self.verdicts(run("--compare", new, FIXTURE).stdout)
        self.assertEqual(v[("cudnn", "mb2ic4ih64oc8kh5")], "faster")

    def test_noise_is_not_a_change(self):
        # 10% slower, but the p10-p90 intervals (+-30%) overlap: same.
        new = os.path.join(self.dir, "noisy.json")
        dump(self.slowed(1.1, spread=0.3), new)
        v = self.verdicts(run("--compare", FIXTURE, new).stdout)
        self.assertEqual(v[("cudnn", "mb2ic4ih64oc8kh5")], "same")
        # 3% slower with tight intervals that do not overlap: below the 5% threshold, same.
        dump(self.slowed(1.03, spread=0.001), new)
        doc = load(FIXTURE)
        for r in doc["results"]:
            if r["backend"] == "cudnn" and r["problem"] == "mb2ic4ih64oc8kh5":
                r["gpu_time_ms"]["p10"] = r["gpu_time_ms"]["median"] * 0.999
                r["gpu_time_ms"]["p90"] = r["gpu_time_ms"]["median"] * 1.001
        old = os.path.join(self.dir, "tight.json")
        dump(doc, old)
        v = self.verdicts(run("--compare", old, new).stdout)
        self.assertEqual(v[("cudnn", "mb2ic4ih64oc8kh5")], "same")

    def test_status_change(self):
        doc = load(FIXTURE)
        for r in doc["results"]:
            if r["backend"] == "libtorch_cuda" and r["problem"] == "mb2ic4ih64oc8kh5":
                r["status"] = "failed"
        new = os.path.join(self.dir, "failed.json")
        dump(doc, new)
        v = self.verdicts(run("--compare", FIXTURE, new).stdout)
        self.assertEqual(v[("libtorch_cuda", "mb2ic4ih64oc8kh5")], "status changed")


if __name__ == "__main__":
    unittest.main(verbosity=2)
