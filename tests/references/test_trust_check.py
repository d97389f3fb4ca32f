#!/usr/bin/env python3
"""scripts/references/trust_check.py without a GPU: every op myops lists has a Python call, the
sample covers every op/dtype group before repeating one, bad input exits 2, and a machine without
torch or CUDA is skipped (77) with the reason, writing nothing.

    test_trust_check.py [path/to/myops]   (without it the op-list check is skipped)"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "references", "trust_check.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import trust_check as tc  # noqa: E402

MYOPS = None


def record(suite, problem, dtype, params, flop=1.0, status="passed", backend="libtorch_cuda"):
    return {"suite": suite, "backend": backend, "problem": problem, "dtype": dtype,
            "status": status, "params": params, "flop": flop, "bytes": flop,
            "timing_mode": "pure:graph", "runs_per_sample": 10,
            "gpu_time_ms": {"median": 0.01}}


def op(name, dtype, n, **extra):
    params = {"op": name, "shape": [n, n], "dtype": dtype, **extra}
    return record("ops", f"{name}:{n}x{n}:{dtype}", dtype, params, flop=float(n * n))


class TrustCheck(unittest.TestCase):
    def test_every_listed_op_has_a_python_call(self):
        if not MYOPS:
            self.skipTest("no myops path given")
        out = subprocess.run([MYOPS, "--list-ops"], capture_output=True, text=True, check=True)
        ops = set()
        for line in out.stdout.splitlines():
            cells = [c for c in line.replace("|", " ").split() if c]
            # rows: category op example, the example being op:shape...
            if len(cells) >= 3 and cells[2].startswith(cells[1] + ":"):
                ops.add(cells[1])
        self.assertGreater(len(ops), 10, out.stdout)
        self.assertEqual(sorted(ops - set(tc.OP_CALLS)), [],
                         "ops that myops lists and trust_check.py cannot time")

    def test_candidates_keep_only_passed_libtorch_cuda_cases_it_can_time(self):
        rs = [op("add", "fp32", 64), op("add", "fp32", 64), op("nosuchop", "fp32", 64)]
        rs[1]["status"] = "incorrect"
        rs.append(dict(op("relu", "fp32", 64), backend="own_cuda"))
        rs.append(record("mlp", "x", "fp32", {}))
        self.assertEqual([r["problem"] for r in tc.candidates(rs)], ["add:64x64:fp32"])

    def test_sample_covers_every_group_before_repeating(self):
        rs = []
        for name in ("add", "matmul", "softmax"):
            for dtype in ("fp32", "bf16"):
                for n in (64, 128, 256, 512):
                    rs.append(op(name, dtype, n))
        conv = {"mb": 1, "ic": 4, "ih": 8, "iw": 8, "oc": 4, "kh": 3, "kw": 3, "layout": "nhwc"}
        rs.append(record("conv", "mb1ic4ih8oc4kh3", "fp16", conv))
        chosen = tc.sample(tc.candidates(rs), 6)
        groups = {(r["params"]["op"], r["dtype"]) for r in chosen if r["suite"] == "ops"}
        self.assertEqual(len(groups), 6)  # 3 ops x 2 dtypes, one each
        self.assertEqual(sum(r["suite"] == "conv" for r in chosen), 1)
        # within a group the smallest comes first, then the largest
        chosen = tc.sample([r for r in tc.candidates(rs) if r["suite"] == "ops"], 12)
        firsts = [r for r in chosen if r["params"]["op"] == "add" and r["dtype"] == "fp32"]
        self.assertEqual([r["params"]["shape"][0] for r in firsts], [64, 512])
        self.assertEqual(tc.sample(rs, 6), tc.sample(list(reversed(rs)), 6))  # deterministic

    def test_loaded_library_names_a_mapped_file(self):
        path = tc.loaded_library("libc")  # every Python on Linux maps its C library
        self.assertTrue(path and os.path.isfile(path), path)
        self.assertIsNone(tc.loaded_library("libnosuchlibrary"))

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                              timeout=60)

    def test_table_marks_flags_within_pythons_own_repeat(self):
        base = {"suite": "ops", "dtype": "bf16", "layout": "", "timing_mode": "pure:graph",
                "ours_gpu_median_ms": 0.0105, "python_gpu_median_ms": 0.01, "ratio": 1.05,
                "device": "gpu", "torch_version": "2", "python_cublaslt": None}
        rows = [dict(base, problem="a", flagged=True, python_repeat_ratio=0.94,
                     within_python_repeat=True),
                dict(base, problem="b", flagged=True, python_repeat_ratio=1.01,
                     within_python_repeat=False),
                dict(base, problem="c", ratio=1.0, flagged=False, python_repeat_ratio=1.0,
                     within_python_repeat=True)]
        md = tc.markdown(rows, "results.json")
        self.assertIn("3 cases, median ratio 1.050, 2 flagged (1 of them within Python's own "
                      "repeat).", md)
        self.assertIn("| 1.050 | 0.940 | outside, *within Python's repeat* |", md)
        self.assertIn("| 1.050 | 1.010 | **outside** |", md)
        self.assertIn("| 1.000 | 1.000 |  |", md)

    def test_python_takes_as_many_samples_as_our_record(self):
        r = op("add", "fp32", 64)
        self.assertEqual(tc.sample_count(r, 50), 50)  # the record names no count
        r["gpu_time_ms"]["samples"] = 1982
        self.assertEqual(tc.sample_count(r, 50), 1982)
        r["gpu_time_ms"]["samples"] = 10
        self.assertEqual(tc.sample_count(r, 50), 50)
        r["gpu_time_ms"]["samples"] = 10 ** 6
        self.assertEqual(tc.sample_count(r, 50), tc.MAX_SAMPLES)

    def test_bad_input_exits_2_with_one_line(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.json")
            with open(bad, "w") as f:
                f.write("{not json")
            for args in ([bad], [os.path.join(d, "missing.json")], [d],
                         [bad, "--per-suite", "0"]):
                p = self.run_script(*args)
                self.assertEqual(p.returncode, 2, (args, p.stderr))
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    def test_no_torch_or_no_cuda_is_a_skip_that_writes_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "results.json")
            with open(path, "w") as f:
                json.dump({"results": [op("add", "fp32", 64)]}, f)
            env = dict(os.environ)
            fake = os.path.join(d, "fake")
            os.mkdir(fake)
            # a torch that finds no CUDA device, so the result does not depend on this machine
            with open(os.path.join(fake, "torch.py"), "w") as f:
                f.write("class cuda:\n    @staticmethod\n    def is_available():\n"
                        "        return False\n")
            env["PYTHONPATH"] = fake
            p = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True,
                               env=env, timeout=60)
            self.assertEqual(p.returncode, 77, p.stderr)
            self.assertIn("no CUDA device", p.stderr)
            self.assertEqual(sorted(os.listdir(d)), ["fake", "results.json"])
            with open(path, "w") as f:
                json.dump({"results": [dict(op("add", "fp32", 64), status="skipped")]}, f)
            p = self.run_script(path)
            self.assertEqual(p.returncode, 77, p.stderr)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        MYOPS = sys.argv.pop(1)
    unittest.main()
