#!/usr/bin/env python3
"""scripts/references/inductor_reference.py without a GPU: the problems parsed from a run's cases,
core's summary, tolerance and sampling rules in Python, the records where torch is missing, lacks
torch.compile or finds no CUDA device (every problem skipped with the reason, exit 0), bad input
(exit 2, one line), the conv report's labels beside results.json; and, where this Python imports
torch, one problem run end to end on the CPU with a stand-in for torch.compile (a test fixture:
Debian's torch has no torch.compile) and a deliberately wrong one that must be recorded
incorrect."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
SCRIPT = os.path.join(SCRIPTS, "references", "inductor_reference.py")
sys.path[:0] = [os.path.join(SCRIPTS, "references"), SCRIPTS]
import inductor_reference as ir  # noqa: E402
from analysis import conv_report  # noqa: E402

PARAMS = {"mb": 2, "ic": 4, "ih": 6, "iw": 6, "oc": 3, "kh": 3, "kw": 3, "sh": 1, "sw": 1,
          "ph": 1, "pw": 1, "dh": 0, "dw": 0, "dilation_h": 1, "dilation_w": 1, "g": 1,
          "oh": 6, "ow": 6, "dtype": "fp32", "layout": "nchw"}


def case(problem, backend, device="cuda", dtype="fp32", name="layer", **params):
    return {"suite": "conv", "backend": backend, "device": device, "problem": problem,
            "name": name, "dtype": dtype, "status": "skipped", "flop": 10.0, "bytes": 20.0,
            "params": dict(PARAMS, dtype=dtype, **params)}


CASES = [case("mb2ic4ih6oc3kh3ph1", "cudnn"), case("mb2ic4ih6oc3kh3ph1", "libtorch_cuda"),
         case("mb2ic4ih6oc3kh3ph1", "onednn_cpu", device="cpu"),
         case("mb2ic4ih6oc3kh3ph1dtbf16nhwc", "cudnn", dtype="bf16", layout="nhwc"),
         case("mb2ic4ih6oc3kh3ph1", "cudnn", name="other")]

# Fake torch modules for the three ways torch can be unusable (put first on PYTHONPATH).
FAKE_TORCH = {
    "missing": "raise ImportError(\"No module named 'torch'\")\n",
    "old": "__version__ = '1.13.1'\n",
    "no_gpu": ("__version__ = '2.9.0'\ndef compile(f, **kw):\n    return f\n"
               "class cuda:\n    @staticmethod\n    def is_available():\n        return False\n"),
}


class Parsing(unittest.TestCase):
    def write(self, d, text):
        path = os.path.join(d, "cases.jsonl")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_distinct_gpu_problems_in_order(self):
        with tempfile.TemporaryDirectory() as d:
            path = self.write(d, "".join(json.dumps(c) + "\n" for c in CASES))
            got = ir.load_problems(path, "cuda")
            self.assertEqual([(p["problem"], p["name"], p["dtype"]) for p in got],
                             [("mb2ic4ih6oc3kh3ph1", "layer", "fp32"),
                              ("mb2ic4ih6oc3kh3ph1dtbf16nhwc", "layer", "bf16"),
                              ("mb2ic4ih6oc3kh3ph1", "other", "fp32")])
            self.assertEqual([p["problem"] for p in ir.load_problems(path, "cpu")],
                             ["mb2ic4ih6oc3kh3ph1"])
            # a results.json reads the same
            path = os.path.join(d, "results.json")
            with open(path, "w") as f:
                json.dump({"schema_version": 2, "results": CASES}, f)
            self.assertEqual(len(ir.load_problems(path, "cuda")), 3)

    def test_bad_lines_are_usage_errors(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaisesRegex(ir.UsageError, "cases.jsonl:2 is not a JSON line"):
                ir.load_problems(self.write(d, json.dumps(CASES[0]) + "\n{oops\n"), "cuda")
            broken = dict(CASES[0], params={"mb": 2})
            with self.assertRaisesRegex(ir.UsageError, "lacks params"):
                ir.load_problems(self.write(d, json.dumps(broken) + "\n"), "cuda")
            with self.assertRaisesRegex(ir.UsageError, "cannot read"):
                ir.load_problems(os.path.join(d, "nonexistent.jsonl"), "cuda")


class CoreRules(unittest.TestCase):
    def test_summary_is_cores(self):
        s = ir.summarize([1.0, 2.0, 3.0, 4.0, 100.0])  # fences 2 -/+ 3: 100 is an outlier
        self.assertEqual((s["samples"], s["outliers"], s["max"]), (5, 1, 4.0))
        self.assertAlmostEqual(s["median"], 2.5)
        self.assertAlmostEqual(s["p10"], 1.3)
        self.assertAlmostEqual(s["stddev"], (5 / 3) ** 0.5)
        self.assertEqual(s["outlier_rule"], "tukey_1.5iqr")
        self.assertEqual(ir.summarize([2.0])["cv"], 0.0)

    def test_tolerance_is_cores(self):
        # rtol of fp16 as a myconv fp16 record writes it (8 * 2^-11)
        self.assertEqual(ir.dot_tolerance("fp16", 27, 1.0)["rtol"], 0.00390625)
        t = ir.dot_tolerance("fp32", 100, 2.0)
        self.assertAlmostEqual(t["atol"], 8 * 2.0 * 10 * 16 * 2.0 ** -24)
        t = ir.dot_tolerance("tf32", 100, 2.0)  # u_in of tf32, rtol of fp32 storage
        self.assertAlmostEqual(t["atol"], 8 * 2.0 * (2.0 ** -11 + 10 * 16 * 2.0 ** -24))
        self.assertEqual(t["rtol"], 8 * 2.0 ** -24)

    def test_sampling_stops_as_cores(self):
        class Clock:  # each reading advances 1 ms
            def __init__(self):
                self.t = 0.0

            def __call__(self):
                self.t += 1e-3
                return self.t

        calls = []
        cfg = dict(ir.MEASURE_DEFAULTS, warmup=2, max_iters=7, min_time_ms=1e9, max_time_ms=1e9)
        s, stop = ir.sample(lambda: calls.append(1), lambda: None, None, cfg, Clock(), Clock())
        self.assertEqual((stop, len(s["total"]), len(calls)), ("max_iters", 7, 9))
        cfg = dict(ir.MEASURE_DEFAULTS, min_time_ms=10, max_time_ms=1e9)
        s, stop = ir.sample(lambda: None, lambda: None, None, cfg, Clock(), Clock())
        self.assertEqual(stop, "converged")  # constant times: cv 0 once min_time has passed
        self.assertGreaterEqual(len(s["total"]), 5)


class Script(unittest.TestCase):
    def run_script(self, d, *args, fake=None):
        env = dict(os.environ)
        if fake:
            fake_dir = os.path.join(d, "fake_" + fake)
            os.makedirs(fake_dir)
            with open(os.path.join(fake_dir, "torch.py"), "w") as f:
                f.write(FAKE_TORCH[fake])
            env["PYTHONPATH"] = fake_dir
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                              timeout=60, env=env)

    def test_unusable_torch_records_every_problem_skipped(self):
        whys = {"missing": "cannot import torch", "old": "torch 1.13.1 has no torch.compile",
                "no_gpu": "torch 2.9.0 finds no CUDA device"}
        with tempfile.TemporaryDirectory() as d:
            cases = os.path.join(d, "cases.jsonl")
            with open(cases, "w") as f:
                f.write("".join(json.dumps(c) + "\n" for c in CASES))
            for fake, why in whys.items():
                out = os.path.join(d, fake + ".json")
                p = self.run_script(d, "--cases", cases, "--output", out, fake=fake)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("skipped: ", p.stdout)
                with open(out) as f:
                    doc = json.load(f)
                rs = doc["results"]
                self.assertEqual(len(rs), 6)  # 3 GPU problems x 2 modes
                self.assertEqual({r["backend"] for r in rs}, set(ir.BACKENDS.values()))
                for r in rs:
                    self.assertEqual(r["status"], "skipped")
                    self.assertIn(why, r["reason"])
                    self.assertEqual((r["suite"], r["device"]), ("conv", "cuda"))
                self.assertEqual(doc["schema_version"], 2)

    def test_bad_input_exits_2_with_one_line(self):
        with tempfile.TemporaryDirectory() as d:
            cases = os.path.join(d, "cases.jsonl")
            with open(cases, "w") as f:
                f.write(json.dumps(CASES[0]) + "\n")
            out = os.path.join(d, "out.json")
            for args in (["--modes", "fast"], ["--min-time-ms", "5", "--max-time-ms", "1"],
                         ["--output", os.path.join(d, "nosuchdir", "x.json")],
                         ["--cases", os.path.join(d, "none.jsonl")]):
                argv = ["--cases", cases, "--output", out] + args
                p = self.run_script(d, *argv)
                self.assertEqual(p.returncode, 2, (args, p.stdout, p.stderr))
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                self.assertFalse(os.path.exists(out))


class ReportLabels(unittest.TestCase):
    def test_a_reference_file_keeps_its_backend_names(self):
        ours = {"results": [dict(CASES[0], backend="cudnn"), dict(CASES[0], backend="halide_cuda")]}
        theirs = {"results": [dict(CASES[0], backend="torch_inductor"),
                              dict(CASES[0], backend="cudnn")]}
        labels = sorted(row.label for rows in conv_report.group_problems([ours, theirs]).values()
                        for row in rows)
        self.assertEqual(labels, ["cudnn #1", "cudnn #2", "halide_cuda", "torch_inductor"])

    def test_ratio_columns_for_inductor_only_where_it_is(self):
        def rec(backend, ms):
            return dict(CASES[0], backend=backend, status="passed", gpu_time_ms={"median": ms})

        ours = {"results": [rec("cudnn", 2.0), rec("halide_cuda", 4.0)]}
        theirs = {"results": [rec("torch_inductor", 1.0),
                              dict(CASES[0], backend="torch_inductor_max_autotune")]}
        text = "\n".join(conv_report.ratio_section(conv_report.group_problems([ours, theirs])))
        header = next(line for line in text.splitlines() if line.startswith("| problem"))
        self.assertIn("Inductor/cuDNN", header)
        # A backend that ran none of the dtype's problems is a line under the table, not a column.
        self.assertNotIn("Inductor max-autotune/cuDNN", header)
        self.assertIn("`torch_inductor_max_autotune` skipped, 1 case(s)", text)
        row = next(line for line in text.splitlines() if "mb2ic4ih6oc3kh3ph1" in line)
        self.assertIn("| 2 |", row)  # Halide 4 / cuDNN 2
        self.assertIn("| 0.5 |", row)  # Inductor 1 / cuDNN 2
        theirs = {"results": [rec("torch_inductor", 1.0), rec("torch_inductor_max_autotune", 3.0)]}
        text = "\n".join(conv_report.ratio_section(conv_report.group_problems([ours, theirs])))
        header = next(line for line in text.splitlines() if line.startswith("| problem"))
        self.assertIn("Inductor max-autotune/cuDNN", header)
        text = "\n".join(conv_report.ratio_section(conv_report.group_problems([ours])))
        self.assertNotIn("Inductor", text)


class WithTorch(unittest.TestCase):
    """One problem on the CPU through run_problem, where this Python has torch. The stand-in for
    torch.compile returns the function itself (Debian's torch 1.13 has no torch.compile); the
    product passes torch.compile."""

    def setUp(self):
        try:
            import torch
        except ImportError:
            self.skipTest(f"{sys.executable} has no torch")
        self.torch = torch
        self.cfg = dict(ir.MEASURE_DEFAULTS, min_time_ms=1, max_time_ms=20)

    def problem(self, dtype, layout):
        return {"problem": "p", "name": "n", "dtype": dtype, "flop": 1e6, "bytes": 1e3,
                "params": dict(PARAMS, dtype=dtype, layout=layout, g=2, oc=4)}

    def test_one_problem_end_to_end_on_the_cpu(self):
        for dtype, layout in (("fp32", "nchw"), ("bf16", "nhwc")):
            prob = self.problem(dtype, layout)
            rec = ir.record(prob, "default", "cpu", self.torch.__version__, "test")
            ir.run_problem(self.torch, lambda f, mode: f, prob, "default", "cpu", self.cfg, 1, rec)
            self.assertEqual(rec["status"], "passed", rec["reason"])
            c = rec["correctness"]
            self.assertTrue(c["passed"])
            self.assertEqual(c["elements"], 2 * 4 * 6 * 6)
            self.assertGreater(c["tolerance"]["atol"], 0)
            self.assertGreater(rec["compile_time_ms"], 0)
            self.assertGreater(rec["total_time_ms"]["median"], 0)
            self.assertIsNone(rec["gpu_time_ms"])  # no device timer on the CPU
            self.assertGreater(rec["gflop_per_s"], 0)
            json.dumps(rec)  # the record is plain data

    def test_a_wrong_output_is_recorded_incorrect(self):
        prob = self.problem("fp32", "nchw")
        rec = ir.record(prob, "max-autotune", "cpu", self.torch.__version__, "test")
        wrong = lambda f, mode: (lambda a, b: f(a, b) * 1.01)  # noqa: E731
        ir.run_problem(self.torch, wrong, prob, "max-autotune", "cpu", self.cfg, 1, rec)
        self.assertEqual(rec["status"], "incorrect")
        self.assertIn("outside atol", rec["reason"])
        self.assertEqual(rec["backend"], "torch_inductor_max_autotune")
        self.assertGreater(len(rec["correctness"]["first_mismatches"]), 0)


if __name__ == "__main__":
    unittest.main()
