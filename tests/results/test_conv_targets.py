#!/usr/bin/env python3
"""Tests of scripts/results/conv_targets.py (issue 14's conv targets) on fabricated result files:
each target met and missed, dtype and layout tokens of the descriptors matched to the shape files, a
failed case counted as missing (never dropped from a geomean), bad input exit 2.

Run: python3 tests/results/test_conv_targets.py (CTest: conv_targets).
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "results"))
import conv_targets  # noqa: E402


def rec(desc, name, backend, ms, dtype="fp32", layout="nchw", status="passed"):
    problem = desc + ("" if dtype == "fp32" else "dt" + dtype)
    problem += "nhwc" if layout == "nhwc" else ""
    return {"backend": backend, "problem": problem, "name": name, "dtype": dtype,
            "status": status, "params": {"layout": layout}, "gpu_time_ms": {"median": ms}}


def resnet(ratio_of, dtype="fp16", layout="nchw"):
    """cuDNN at 1 ms, ours at 1/ratio ms (speed = ratio) on every ResNet-50 layer."""
    out = []
    for name, desc in conv_targets.shape_set("resnet50"):
        out.append(rec(desc, name, "cudnn", 1.0, dtype, layout))
        out.append(rec(desc, name, "im2col_gemm_cuda", 1.0 / ratio_of(name), dtype, layout))
    return out


def rows(records):
    times = {}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"results": records}, f)
        times = conv_targets.load([path])
    return conv_targets.targets(times, ["nchw", "nhwc"], ["fp32", "tf32", "fp16", "bf16"])[0]


def row(lines, start, layout, dtype):
    hits = [ln for ln in lines if ln.startswith(f"| {start}") and f"| {layout} | {dtype} |" in ln]
    assert len(hits) == 1, (start, layout, dtype, lines)
    return hits[0]


class ConvTargets(unittest.TestCase):
    def test_resnet_geomean_and_lowest_layer(self):
        lines = rows(resnet(lambda n: 0.5 if n == "res2_1x1_up" else 1.0))
        g = row(lines, "ResNet-50 geomean", "nchw", "fp16")
        self.assertIn(f"{0.5 ** (1 / 6):.3f}", g)  # geomean of five 1.0 and one 0.5
        self.assertIn("| met |", g)
        low = row(lines, "ResNet-50 no layer", "nchw", "fp16")
        self.assertIn("0.500 (res2_1x1_up)", low)
        self.assertIn("**missed**", low)

    def test_fp32_res3_and_layout_tokens(self):
        lines = rows(resnet(lambda n: 0.75 if n == "res3_3x3" else 0.9, "fp32", "nhwc"))
        self.assertIn("0.750", row(lines, "ResNet-50 res3_3x3", "nhwc", "fp32"))
        self.assertIn("| met |", row(lines, "ResNet-50 res3_3x3", "nhwc", "fp32"))
        self.assertFalse(any("| nchw |" in ln for ln in lines))  # nothing made up for nchw

    def test_failed_case_is_missing_not_dropped(self):
        recs = resnet(lambda n: 2.0, "bf16")
        for r in recs:
            if r["name"] == "conv1" and r["backend"] == "im2col_gemm_cuda":
                r["status"] = "failed"
        lines = rows(recs)
        self.assertIn("| missing | **missed** |", row(lines, "ResNet-50 geomean", "nchw", "bf16"))
        self.assertIn("**missed**", row(lines, "ResNet-50 no layer", "nchw", "bf16"))

    def test_depthwise_halide_and_seed(self):
        recs = []
        for name, desc in conv_targets.shape_set("mobilenet_v2"):
            if "_dw" in name:
                recs += [rec(desc, name, "cudnn", 1.0),
                         rec(desc, name, "im2col_gemm_cuda", 1.0 if name != "b1_dw" else 2.0)]
        for name, desc in conv_targets.shape_set("resnet50") + conv_targets.shape_set("vgg16"):
            recs += [rec(desc, name, "cudnn", 1.0), rec(desc, name, "halide_cuda", 1.6)]
        for name, desc in conv_targets.shape_set("seed"):
            recs += [rec(desc, name, "cudnn", 1.0), rec(desc, name, "im2col_gemm_cuda", 0.5)]
        lines = rows(recs)
        self.assertIn("9 of 10 (lowest 0.500, b1_dw) | **missed**",
                      row(lines, "depthwise", "nchw", "fp32"))
        self.assertIn("0.625 | met", row(lines, "Halide CUDA", "nchw", "fp32"))
        seed = row(lines, "seed grid", "nchw", "fp32")
        self.assertIn("9 of 9 (lowest 2.000,", seed)
        self.assertIn("| met |", seed)

    def test_bad_input_exits_2_with_one_line(self):
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "bad.json")
            with open(bad, "w", encoding="utf-8") as f:
                f.write("{not json")
            for args in ([bad], [os.path.join(d, "absent.json")]):
                script = os.path.join(ROOT, "scripts", "results", "conv_targets.py")
                p = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
                self.assertEqual(p.returncode, 2)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


if __name__ == "__main__":
    unittest.main()
