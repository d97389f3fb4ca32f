#!/usr/bin/env python3
"""Tests of the MLP report's targets (scripts/analysis/mlp_report.py, targets()) on fabricated
records: each of issue 12's targets met on one case and missed on another, and a case whose
partner is absent left out.

Run: python3 tests/analysis/test_mlp_report.py (CTest: mlp_report).
"""

import os
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from analysis import mlp_report  # noqa: E402


def rec(backend, dim, dtype="fp32", name="", gpu=None, total=None, frac=None, device="cuda",
        layers=4, batch=256, steps=2, timing="real"):
    r = {"suite": "mlp", "backend": backend, "device": device, "dtype": dtype, "name": name,
         "status": "passed", "timing_mode": timing,
         "problem": f"mlp:d{dim}l{layers}b{batch}s{steps}:{dtype}",
         "params": {"kind": "mlp", "dim": dim, "num_layers": layers, "batch_size": batch,
                    "num_steps": steps}, "metrics": {}}
    if gpu is not None:
        r["gpu_time_ms"] = {"median": gpu}
    if total is not None:
        r["total_time_ms"] = {"median": total}
    if frac is not None:
        r["metrics"]["fraction_of_ceiling"] = frac
    return r


def verdicts(rows, target_start):
    return [(r[1], r[3]) for r in rows if r[0].startswith(target_start)]


class MlpTargets(unittest.TestCase):
    def test_graph_against_eager(self):
        rows = mlp_report.targets([
            rec("libtorch_graph", 128, name="example", gpu=2.0, layers=16, batch=128, steps=5),
            rec("libtorch_eager_cuda", 128, name="example", gpu=14.0, layers=16, batch=128,
                steps=5),
            rec("libtorch_graph", 128, "bf16", name="example", gpu=3.0, layers=16, batch=128,
                steps=5),
            rec("libtorch_eager_cuda", 128, "bf16", name="example", gpu=10.0, layers=16,
                batch=128, steps=5)])
        v = verdicts(rows, "libtorch_graph <= 0.2x")
        self.assertEqual(len(v), 2)
        self.assertEqual(v[0][1], "met")               # 2/14 = 0.143
        self.assertTrue(v[1][1].startswith("missed"))  # 3/10 = 0.3

    def test_ceiling_bars(self):
        rows = mlp_report.targets([
            rec("libtorch_graph", 4096, "fp32", frac=0.96),
            rec("cublaslt_fused", 4096, "fp32", frac=0.90),
            rec("cublaslt_fused", 4096, "bf16", frac=0.71),
            rec("libtorch_eager_cpu", 4096, "fp32", frac=0.5, device="cpu")])  # not a CUDA one
        v = verdicts(rows, "dim 4096")
        self.assertEqual([x[1][:6] for x in v], ["met", "missed", "met"])

    def test_fused_against_graph_worst_case(self):
        rows = mlp_report.targets([
            rec("cublaslt_fused", 256, name="base", gpu=0.24),
            rec("libtorch_graph", 256, name="base", gpu=0.26),
            rec("cublaslt_fused", 512, name="scale_dim_x2", gpu=0.40),
            rec("libtorch_graph", 512, name="scale_dim_x2", gpu=0.33),
            rec("cublaslt_fused", 768, name="scale_dim_x3", gpu=0.30)])  # no graph partner
        v = verdicts(rows, "cublaslt_fused <= libtorch_graph")
        self.assertEqual(len(v), 1)
        self.assertIn("2 sizes", v[0][0])
        self.assertIn("d512", v[0][0])
        self.assertTrue(v[0][1].startswith("missed at 1 of 2"), v[0][1])

    def test_own_cuda_against_graph_has_its_own_row(self):
        rows = mlp_report.targets([
            rec("own_cuda", 256, "bf16", name="base", gpu=0.20),
            rec("libtorch_graph", 256, "bf16", name="base", gpu=0.26),
            rec("cublaslt_fused", 256, "bf16", name="base", gpu=0.30)])
        own = verdicts(rows, "own_cuda <= libtorch_graph")
        self.assertEqual(len(own), 1)
        self.assertIn("1 sizes in bf16", own[0][0])
        self.assertTrue(own[0][1].startswith("met"), own[0][1])
        fused = verdicts(rows, "cublaslt_fused <= libtorch_graph")
        self.assertTrue(fused[0][1].startswith("missed at 1 of 1"), fused[0][1])

    def test_cpp_against_python(self):
        ex = dict(layers=16, batch=128, steps=5)
        rows = mlp_report.targets([
            rec("libtorch_eager_cuda", 128, "fp32", name="example", gpu=14.0, total=14.5, **ex),
            rec("pytorch_python_eager", 128, "fp32", total=15.0, **ex),
            rec("libtorch_eager_cuda", 128, "bf16", name="example", gpu=17.0, total=17.5, **ex),
            rec("pytorch_python_eager", 128, "bf16", total=15.0, **ex)])
        v = verdicts(rows, "C++ libtorch_eager_cuda <= Python")
        self.assertEqual([x[1][:6] for x in v], ["met", "missed"])

    def test_timing_both_keeps_the_modes_apart(self):
        # --timing both: each size has a real and a pure record per backend. Fused is slower
        # than graph in real timing only; mixing the modes would pair a real record with a
        # pure one and hide it.
        records = [
            rec("cublaslt_fused", 256, name="base", gpu=0.30),
            rec("libtorch_graph", 256, name="base", gpu=0.26),
            rec("cublaslt_fused", 256, name="base", gpu=0.20, timing="pure:back-to-back"),
            rec("libtorch_graph", 256, name="base", gpu=0.25, timing="pure:back-to-back"),
            rec("cublaslt_fused", 512, name="scale_dim_x2", gpu=0.50),
            rec("cublaslt_fused", 512, name="scale_dim_x2", gpu=0.35, timing="pure:back-to-back")]
        v = verdicts(mlp_report.targets(records), "cublaslt_fused <= libtorch_graph")
        self.assertEqual(len(v), 2, v)
        self.assertIn("1 sizes in fp32 (pure)", v[0][0])
        self.assertEqual(v[0][1], "met")
        self.assertIn("1 sizes in fp32;", v[1][0])
        self.assertTrue(v[1][1].startswith("missed at 1 of 1"), v[1][1])
        groups = mlp_report.studies(records)
        self.assertEqual(sorted(groups), [("cublaslt_fused (pure)", "fp32", "dim"),
                                          ("cublaslt_fused (real)", "fp32", "dim")])
        self.assertEqual(groups[("cublaslt_fused (real)", "fp32", "dim")],
                         [(1.0, 0.30), (2.0, 0.50)])
        self.assertEqual(groups[("cublaslt_fused (pure)", "fp32", "dim")],
                         [(1.0, 0.20), (2.0, 0.35)])
        # One mode: the backend is named as before.
        self.assertEqual(sorted(mlp_report.studies(records[:2] + records[4:5])),
                         [("cublaslt_fused", "fp32", "dim")])


if __name__ == "__main__":
    unittest.main()
