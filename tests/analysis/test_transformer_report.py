#!/usr/bin/env python3
"""Tests of the transformer suite's report (scripts/analyze_results.py on results of suite
"transformer", written by scripts/analysis/transformer_report.py) from a fixture
(tests/analysis/fixtures/transformer_results.json): mytransformer's records of a tiny random
GPT-2 on the CPU (batch 1, 2, 4 x input 4, 8, output 4; mb4in8out4 skipped by
max_batch_input_product 16), plus one fabricated libtorch_graph record (mb1in4out4, decode
times halved: extra.fixture_note). The fixture predates the memory prediction ("not recorded");
the memory target is tested on copies of it turned into CUDA records with a measured peak and a
prediction.

Run: python3 tests/analysis/test_transformer_report.py (CTest: transformer_report).
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
FIXTURE = os.path.join(ROOT, "tests", "analysis", "fixtures", "transformer_results.json")


class TransformerReport(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_report(self):
        p = subprocess.run([sys.executable, SCRIPT, FIXTURE, "--output-dir", self.dir],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.dir, "report.md")) as f:
            md = f.read()
        self.assertIn("# mytransformer report", md)
        self.assertIn("7 case(s) from 1 file(s), 6 passed", md)
        self.assertIn("### tiny, cpu, fp32", md)
        # The graph record against eager on the same case: decode twice as fast.
        self.assertRegex(md, r"\| libtorch_graph \| tiny/cpu/fp32 \| mb1in4out4 \| 2 \|")
        # A case that could not run: one line per implementation and reason.
        self.assertIn("- `libtorch_eager` skipped, 1 case(s): batch x input length = 32 exceeds "
                      "max_batch_input_product 16", md)
        self.assertIn("Every case that ran passed.", md)
        # Records without the prediction: shown as such, never recomputed here.
        self.assertRegex(md, r"\| mb1in4out4 \| passed \|.*\| not recorded \| n/a \|  \|")
        self.assertIn("- Peak memory within 10% of the prediction from the config: not recorded",
                      md)
        self.assertIn("No transformer Chrome trace in `traces/` beside the inputs", md)
        plots = os.path.join(self.dir, "plots")
        if "No plots:" not in md:
            # The seed tool's plots (performance_comparison: the graph and eager records share
            # mb1in4out4) and the distribution; each one the report shows.
            for name in ("latency_heatmap.png", "throughput_heatmap.png",
                         "batch_size_scaling.png", "input_length_scaling.png",
                         "time_breakdown.png", "performance_comparison.png", "memory_usage.png",
                         "decode_step_distribution.png"):
                self.assertTrue(os.path.exists(os.path.join(plots, name)), name)
                self.assertIn(f"(plots/{name})", md)
        with open(os.path.join(self.dir, "index.html")) as f:
            page = f.read()
        self.assertIn("<title>mytransformer report</title>", page)
        self.assertEqual(page.count("<img "), md.count("!["))

    def test_report_only(self):
        os.makedirs(os.path.join(self.dir, "plots"))
        kept = os.path.join(self.dir, "plots", "latency_heatmap.png")
        open(kept, "w").close()
        p = subprocess.run([sys.executable, SCRIPT, FIXTURE, "--output-dir", self.dir,
                            "--report-only"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.dir, "report.md")) as f:
            md = f.read()
        self.assertIn("No plots: made with `--report-only`.", md)
        self.assertNotIn("](plots/", md)
        self.assertTrue(os.path.exists(kept))  # plots/ left as it is
        self.assertEqual(os.listdir(os.path.join(self.dir, "plots")), ["latency_heatmap.png"])

    def test_operations_from_a_trace(self):
        """A Chrome trace as core/trace_report.cpp writes it: one set-up call (not counted) and
        two counted calls, each a prefill and two decode steps, kernels launched from them."""
        events, corr = [], [0]

        def host(name, ts, dur):
            events.append({"ph": "X", "cat": "host_range", "name": name, "pid": 1, "tid": 7,
                           "ts": ts, "dur": dur, "args": {}})

        def kernel(name, launch_ts, dur):
            corr[0] += 1
            events.append({"ph": "X", "cat": "cuda_api", "name": "cudaLaunchKernel", "pid": 1,
                           "tid": 7, "ts": launch_ts, "dur": 1,
                           "args": {"correlation": corr[0]}})
            # the GPU runs it later, outside the range that launched it
            events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 100, "tid": 3,
                           "ts": launch_ts + 500, "dur": dur,
                           "args": {"name": name, "correlation": corr[0]}})

        def generation(t0):
            host("prefill", t0, 100)
            kernel("nvjet_sm90_hsh_64x8_TNT", t0 + 10, 60)      # matmul
            kernel("cudnn_sdpa_flash_fprop", t0 + 20, 30)       # attention
            for s in range(2):
                ts = t0 + 100 + 100 * s
                host("decode step", ts, 100)
                kernel("gemv2T_kernel_val", ts + 10, 8)         # matmul
                kernel("vectorized_layer_norm_kernel", ts + 20, 2)  # normalization

        host("set-up call (not counted)", 0, 400)
        generation(0)
        for i, t0 in enumerate((1000, 2000)):
            host(f"call {i + 1}", t0, 400)
            generation(t0)
        doc = {"traceEvents": events, "otherData": {
            "suite": "transformer", "backend": "libtorch_graph", "device": "cuda",
            "problem": "mb1in4out3", "name": "tiny", "dtype": "fp16",
            "device_activity": "CUPTI (fake)"}}
        os.makedirs(os.path.join(self.dir, "traces"))
        with open(os.path.join(self.dir, "traces", "libtorch_graph.mb1in4out3.tiny.json"),
                  "w") as f:
            json.dump(doc, f)
        shutil.copy(FIXTURE, os.path.join(self.dir, "results.json"))
        p = subprocess.run([sys.executable, SCRIPT, os.path.join(self.dir, "results.json"),
                            "--report-only"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.dir, "report.md")) as f:
            md = f.read()
        self.assertIn("### tiny libtorch_graph cuda fp16 `mb1in4out3`", md)
        self.assertIn("2 counted call(s), 2 prefill and 4 decode-step ranges", md)
        # Per prefill: matmul 60 + attention 30 us; per decode step: matmul 8 + norm 2 us. A
        # generation (1 prefill + 2 steps): matmul 76, attention 30, normalization 4 of 110 us.
        self.assertIn("| matmul (GEMM/GEMV) | 60.0 | 66.7% | 8.0 | 80.0% | 69.1% |", md)
        self.assertIn("| attention | 30.0 | 33.3% | 0.0 | 0.0% | 27.3% |", md)
        self.assertIn("| normalization | 0.0 | 0.0% | 2.0 | 20.0% | 3.6% |", md)
        self.assertIn("Optimisation priorities (largest share of a generation first): "
                      "1. matmul (GEMM/GEMV) (69%); 2. attention (27%); 3. normalization (4%).",
                      md)
        # The prefill's two kernels overlap ([510, 570] and [520, 550] after its start): the
        # device was busy 60 us of their 90; a decode step's two do not (10 us).
        self.assertIn("| device busy (union of intervals) | 60.0 |  | 10.0 |  |  |", md)
        # The summaries are kept beside the report: without the traces, the same section.
        self.assertTrue(os.path.isfile(os.path.join(self.dir, "operations.json")))
        shutil.rmtree(os.path.join(self.dir, "traces"))
        p = subprocess.run([sys.executable, SCRIPT, os.path.join(self.dir, "results.json"),
                            "--report-only"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.dir, "report.md")) as f:
            again = f.read()
        self.assertIn("The traces are not kept in this folder; their summaries are", again)
        section = md.split("## Operations inside")[1].split("\n## ")[0]
        self.assertIn(section.split("### tiny")[1], again)

    def memory_report(self, ratios):
        """The report of the fixture with its first passed eager records made CUDA records whose
        measured peak is ratios[i] x a predicted 300 MiB."""
        with open(FIXTURE) as f:
            doc = json.load(f)
        eager = [r for r in doc["results"]
                 if r["status"] == "passed" and r["backend"] == "libtorch_eager"]
        for r, ratio in zip(eager, ratios):
            predicted = 300 * 2**20
            r["device"] = "cuda"
            r["metrics"].update(peak_allocated_bytes=round(ratio * predicted),
                                predicted_peak_bytes=predicted, peak_vs_prediction=ratio)
        return self.report_of(doc, "memory.json")

    def report_of(self, doc, name):
        """report.md of the results document doc, written as NAME in the test's folder."""
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        p = subprocess.run([sys.executable, SCRIPT, path, "--output-dir", self.dir],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.dir, "report.md")) as f:
            return f.read()

    def test_memory_target_met(self):
        md = self.memory_report([1.04, 0.93, 1.0])
        self.assertIn("### tiny, cuda, fp32", md)
        # Measured beside predicted, with the recorded ratio.
        self.assertRegex(md, r"\| mb1in4out4 \| passed \|.*\| 312\.0 \| 300\.0 \| 1\.04 \|")
        self.assertRegex(md, r"prediction from the config: met; 3 case\(s\), worst "
                             r"libtorch_eager tiny/cuda/fp32 mb\w+: peak 279\.0 MiB, predicted "
                             r"300\.0 MiB, peak/predicted 0\.93")

    def test_memory_target_missed(self):
        md = self.memory_report([1.04, 1.2, 0.85])
        self.assertRegex(md, r"prediction from the config: \*\*missed\*\* \(2 of 3 outside\); "
                             r"3 case\(s\), worst libtorch_eager tiny/cuda/fp32 mb\w+: peak "
                             r"360\.0 MiB, predicted 300\.0 MiB, peak/predicted 1\.2")

    def test_mixed_suites_refused(self):
        ops = os.path.join(ROOT, "tests", "analysis", "fixtures", "ops_results.json")
        p = subprocess.run([sys.executable, SCRIPT, FIXTURE, ops, "--output-dir", self.dir],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1)
        self.assertTrue(re.search("different suites", p.stderr), p.stderr)


    def test_decode_and_prefill_targets(self):
        """Graph decode at batch 1 against the model's bar (gpt2: 0.5 ms), and eager TTFT against
        an hf_transformers manual record of the same case."""
        with open(FIXTURE) as f:
            doc = json.load(f)
        graph = next(r for r in doc["results"]
                     if r["status"] == "passed" and r["backend"] == "libtorch_graph")
        eager = next(r for r in doc["results"] if r["status"] == "passed" and
                     r["backend"] == "libtorch_eager" and r["problem"] == graph["problem"])
        recs = []
        for ms, case in ((0.45, "mb1in4out4"), (0.6, "mb1in8out4")):
            r = json.loads(json.dumps(graph))
            r.update(device="cuda", problem=case, name="gpt2")
            r["params"].update(model="gpt2", batch_size=1, input_length=int(case[5:-4]))
            r["metrics"]["decode_ms_per_token_median"] = ms
            recs.append(r)
        e = json.loads(json.dumps(eager))
        e["metrics"]["ttft_ms"] = 2.0
        h = json.loads(json.dumps(eager))
        h.update(backend="hf_transformers", extra={"method": "manual"})
        h["metrics"]["ttft_ms"] = 1.6
        doc["results"] = recs + [e, h]
        md = self.report_of(doc, "targets.json")
        self.assertIn("decode at batch 1, gpt2: <= 0.5 ms per token: **missed** at 1 of 2 cases, "
                      "the worst by 20%", md)
        self.assertIn("qwen2-0.5b: <= 1 ms per token: not recorded", md)
        self.assertRegex(md, r"no slower than HF's manual loop: \*\*missed\*\* at 1 of 1 cases; "
                             r".*2\.00 ms against 1\.60 ms \(1\.25x\)")

if __name__ == "__main__":
    unittest.main()
