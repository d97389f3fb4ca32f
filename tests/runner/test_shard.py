#!/usr/bin/env python3
"""scripts/runner/shard.py (the split of --shard, the cost of --gpus' queue order), gpus.py (the
GPU list, --gpus, the core split), queue.py (the GPU workers' shared queue), the report's time
split (analysis/slots.py) and merge_results.py's refusals, without running any case (unittest)."""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import merge_results  # noqa: E402
from analysis.common import gpu_models_note, systems_section  # noqa: E402
from analysis.slots import time_split_section  # noqa: E402
from runner import gpus, isolation, queue, shard  # noqa: E402
from runner.common import UsageError  # noqa: E402


def dump(obj, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)


def read(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def case(problem, backend, flop=1e6, device="cpu"):
    return {"problem": problem, "name": "", "backend": backend, "device": device, "flop": flop}


def grid(n_problems=7, backends=("a_cpu", "b_cpu", "c_cuda")):
    return [case(f"mb1ic{p + 1}ih8oc2kh3", b, flop=1e6 * (p + 1) ** 3,
                 device="cuda" if b.endswith("cuda") else "cpu")
            for p in range(n_problems) for b in backends]


class Split(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(shard.parse_shard("2/4"), (2, 4))
        for bad in ("0/2", "3/2", "1/0", "a/b", "1/2/3", "", "1-2"):
            with self.assertRaises(UsageError):
                shard.parse_shard(bad)

    def test_partition(self):
        cases = grid()
        for n in (1, 2, 3, 5, 9):
            parts = [shard.shard_of(cases, i, n)[0] for i in range(1, n + 1)]
            keys = [shard.key_of(c) for p in parts for c in p]
            self.assertEqual(sorted(keys), sorted(shard.key_of(c) for c in cases), n)
            self.assertEqual(len(keys), len(set(keys)), n)
            for p in parts:  # each part keeps the list order and whole problems
                idx = [cases.index(c) for c in p]
                self.assertEqual(idx, sorted(idx))
                probs = {c["problem"] for c in p}
                self.assertEqual(len(p), 3 * len(probs))

    def test_deterministic_and_recorded(self):
        cases = grid()
        a, rec = shard.shard_of(cases, 2, 3)
        b, rec2 = shard.shard_of([dict(c) for c in cases], 2, 3)
        self.assertEqual(a, b)
        self.assertEqual(rec, rec2)
        self.assertEqual(rec["case_list_sha256"], shard.case_list_sha256(cases))
        self.assertEqual([cases[i] for i in rec["case_indices"]], a)
        self.assertNotEqual(rec["case_list_sha256"], shard.case_list_sha256(cases[:-1]))

    def test_balanced_by_cost(self):
        # One heavy problem and many light ones: the heavy one alone in a shard.
        cases = [case("heavy", "x", flop=1e12)] + [case(f"p{i}", "x", flop=1e6)
                                                   for i in range(20)]
        (s1, r1), (s2, r2) = (shard.shard_of(cases, i, 2) for i in (1, 2))
        self.assertEqual([c["problem"] for c in s1], ["heavy"])
        self.assertEqual(len(s2), 20)
        # Equal costs: counts differ by at most one unit.
        even = [case(f"p{i}", "x") for i in range(10)]
        sizes = [len(shard.shard_of(even, i, 3)[0]) for i in (1, 2, 3)]
        self.assertEqual(sorted(sizes), [3, 3, 4])

    def test_times_override_flops(self):
        cases = [case("p1", "x", flop=1e12), case("p2", "x", flop=1e6),
                 case("p3", "x", flop=1e6)]
        times = {("p1", "", "x"): 1.0, ("p2", "", "x"): 100.0}
        costs = shard.case_costs(cases, times)
        self.assertEqual(costs[:2], [1.0, 100.0])
        members, _ = shard.split(cases, 2, costs)
        self.assertEqual(members[0], [1])  # p2, the slow one by the earlier run, alone

    def test_time_cost_of_a_record(self):
        rec = {"total_time_ms": {"median": 2.0, "samples": 500}, "compile_time_ms": 1000.0,
               "first_run_ms": 0.0}
        self.assertAlmostEqual(shard.time_cost(rec), shard.CASE_OVERHEAD_S + 2.0)
        self.assertIsNone(shard.time_cost({"status": "skipped"}))


class Gpus(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.smi = os.path.join(self.tmp.name, "nvidia-smi")
        with open(self.smi, "w") as f:
            f.write("#!/bin/sh\necho '0, GPU-aaaa, NVIDIA H200'\necho '1, GPU-bbbb, NVIDIA H200'"
                    "\necho '2, GPU-cccc, NVIDIA H100 80GB HBM3'\n")
        os.chmod(self.smi, 0o755)
        self.env = dict(os.environ)
        os.environ["MYCONV_NVIDIA_SMI"] = self.smi
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.env)
        self.tmp.cleanup()

    def test_select(self):
        self.assertEqual([g["index"] for g in gpus.select("all")], [0, 1, 2])
        self.assertEqual([g["uuid"] for g in gpus.select("2")], ["GPU-aaaa", "GPU-bbbb"])
        self.assertEqual([g["index"] for g in gpus.select("2,GPU-aaaa")], [2, 0])
        self.assertEqual(gpus.select("1")[0]["name"], "NVIDIA H200")
        for bad in ("4", "0", "7", "1,1", "GPU-zzzz"):
            with self.assertRaises(UsageError, msg=bad):
                gpus.select(bad)

    def test_visible_devices(self):
        os.environ["CUDA_VISIBLE_DEVICES"] = "GPU-cccc,1"
        self.assertEqual([g["index"] for g in gpus.select("all")], [2, 1])
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        self.assertEqual(gpus.the_single_gpu()["uuid"], "GPU-bbbb")
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        with self.assertRaises(UsageError):
            gpus.select("all")

    def test_no_gpu(self):
        os.environ["MYCONV_NVIDIA_SMI"] = "/nonexistent/nvidia-smi"
        with self.assertRaises(UsageError) as e:
            gpus.select("all")
        self.assertIn("no GPU found", str(e.exception))
        self.assertIsNone(gpus.the_single_gpu())

    def test_core_split(self):
        g, c = gpus.core_split(range(16), 1)
        self.assertEqual((g, c), ([list(range(8))], list(range(8, 16))))
        g, c = gpus.core_split(range(192), 8)
        self.assertEqual([len(x) for x in g], [12] * 8)
        self.assertEqual(c, list(range(96, 192)))
        self.assertFalse(set(c) & {x for s in g for x in s})
        g, c = gpus.core_split(range(2), 2)  # no core left: the CPU worker waits
        self.assertEqual((g, c), ([[0], [1]], []))
        self.assertEqual(gpus.core_split(range(4), 0), ([], [0, 1, 2, 3]))
        self.assertEqual(gpus.core_split(range(8), 2, per_gpu=1), ([[0], [1]], list(range(2, 8))))


class MergeRefusals(unittest.TestCase):
    """merge_results.py on hand-made shard folders (run.json, cases.jsonl, results.json)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.cases = grid(4, ("a_cpu",))

    def tearDown(self):
        self.tmp.cleanup()

    def make(self, name, index, count, cases=None, complete=True, commit="c" * 40):
        cases = cases or self.cases
        mine, rec = shard.shard_of(cases, index, count)
        d = os.path.join(self.tmp.name, name)
        os.makedirs(d)
        config = {"suite": "conv", "schema_version": 2, "extra_args": [], "quick": True,
                  "grid_args": [], "label": "t", "shard": rec,
                  "source": {"commit": commit, "origin": "git"}}
        dump(config, os.path.join(d, "run.json"))
        with open(os.path.join(d, "cases.jsonl"), "w") as f:
            f.writelines(json.dumps(c) + "\n" for c in mine)
        done = mine if complete else mine[:-1]
        results = [dict(c, status="passed", dtype="fp32") for c in done]
        dump({"schema_version": 2, "system": {"host": name}, "results": results},
             os.path.join(d, "results.json"))
        return d

    def merge(self, *args):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = merge_results.main(list(args))
        return rc, err.getvalue().strip()

    def refused(self, expect, *args):
        rc, err = self.merge(*args)
        self.assertEqual(rc, 2, err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn(expect, err)

    def test_refusals(self):
        s1, s2 = self.make("s1", 1, 2), self.make("s2", 2, 2)
        other = self.make("o2", 2, 2, cases=grid(5, ("a_cpu",)))
        dup = self.make("d1", 1, 2)
        src = self.make("x2", 2, 2, commit="d" * 40)
        out = os.path.join(self.tmp.name, "out")
        self.refused("different case lists", s1, other, "--output-dir", out)
        self.refused("duplicate shard 1/2", s1, dup, "--output-dir", out)
        self.refused("shard(s) 2/2 not given", s1, "--output-dir", out)
        self.refused("different source", s1, src, "--output-dir", out)
        self.refused("is not a run folder", s1, os.path.join(self.tmp.name, "nope"))
        self.refused("give the shards", "--partial")
        self.assertFalse(os.path.exists(out))
        inc = self.make("i2", 2, 2, complete=False)
        self.refused("has 1 of 2 cases", s1, inc, "--output-dir", out)
        rc, err = self.merge(s1, inc, "--partial", "--output-dir", out)
        self.assertEqual(rc, 0, err)
        doc = read(os.path.join(out, "results.json"))
        self.assertEqual((doc["run"]["recorded"], doc["run"]["cases"], doc["run"]["complete"]),
                         (3, 4, False))
        rc, err = self.merge(s2, s1, "--output-dir", out)  # over the earlier merge, any order
        self.assertEqual(rc, 0, err)
        doc = read(os.path.join(out, "results.json"))
        self.assertTrue(doc["run"]["complete"])
        self.assertEqual([r["problem"] for r in doc["results"]],
                         [c["problem"] for c in self.cases])
        self.assertEqual([s["host"] for s in doc["systems"]], ["s1", "s2"])
        self.assertEqual(doc["system"]["host"], "s1, s2")
        self.refused("holds no earlier merge", s1, s2, "--output-dir", s1 + "/..")


class MergedReport(unittest.TestCase):
    def test_mixed_gpu_models_and_systems(self):
        r = [{"device": "cuda", "gpu": {"name": "NVIDIA H200"}},
             {"device": "cuda", "gpu": {"name": "NVIDIA H100 80GB HBM3"}},
             {"device": "cpu"}]
        note = "\n".join(gpu_models_note(r))
        self.assertIn("Mixed GPU models", note)
        self.assertIn("NVIDIA H200 (1 results)", note)
        self.assertEqual(gpu_models_note(r[:1] + r[2:]), [])
        doc = {"systems": [{"part": "s1", "system": {"host": "a", "gpus": [{"name": "X"}]}},
                           {"part": "s2", "system": {"host": "b", "gpus": []}}]}
        text = "\n".join(systems_section(doc))
        self.assertIn("| host | a | b |", text)
        self.assertIn("| GPUs | X | none |", text)
        self.assertEqual(systems_section({"systems": doc["systems"][:1]}), [])


class QueueRunner(queue.QueueMixin, isolation.IsolationMixin):
    """A GPU worker's claims on the shared queue, without a program: claim() only."""

    def __init__(self, run_dir, name, cases, sharing=2, isolate=False):
        self.run_dir, self.records, self.cases, self.suite = run_dir, {}, cases, "conv"
        self.config = {"isolate": isolate,
                       "worker": {"name": name, "queue": "queue.jsonl", "sharing": sharing}}
        self.log = type("Log", (), {"tag": "[myconv]", "detail": lambda self, line: None})()

    def take(self, groups):
        """Claims a chunk and records its cases as run; the problems claimed."""
        chunk = self.claim(groups, os.path.join(self.run_dir, "queue.jsonl"))
        for pc, backends in chunk:
            for b in backends:
                self.records[(pc["problem"], "", b)] = {}
        return [pc["problem"] for pc, _ in chunk]


class SharedQueueTest(unittest.TestCase):
    cases = [{"problem": f"p{i}", "name": "", "backend": b, "device": "cuda"}
             for i in range(40) for b in ("cudnn", "libtorch_cuda")]

    def test_two_workers_share_the_queue(self):
        with tempfile.TemporaryDirectory() as d:
            groups = queue.group_cases(self.cases)
            a, b = QueueRunner(d, "gpu0", self.cases), QueueRunner(d, "gpu1", self.cases)
            taken, sizes = {"gpu0": [], "gpu1": []}, []
            # gpu0 is three times as fast: it claims three times per claim of gpu1.
            for turn in range(200):
                w = b if turn % 4 == 3 else a
                got = w.take(groups)
                if got:
                    sizes.append(len(got))
                taken[w.config["worker"]["name"]] += got
            everything = taken["gpu0"] + taken["gpu1"]
            self.assertEqual(sorted(everything), sorted(groups_names(groups)))
            self.assertEqual(len(everything), len(set(everything)), "a problem claimed twice")
            self.assertEqual(sizes, sorted(sizes, reverse=True), "claims shrink")
            self.assertEqual((sizes[0], sizes[-1]), (10, 1))  # 40 / (2 x 2 workers), then 1
            self.assertGreater(len(taken["gpu0"]), 2 * len(taken["gpu1"]))
            claims = queue.read_claims(os.path.join(d, "queue.jsonl"))
            self.assertEqual({k[0]: v for k, v in claims.items()},
                             {p: w for w in taken for p in taken[w]})

    def test_resumed_worker_finishes_its_own_claims_first(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "queue.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                f.write('{"problem": "p1", "name": "", "worker": "gpu0"}\n'
                        '{"problem": "p0", "name": "", "worker": "gpu1"}\n{"probl')  # torn
            w = QueueRunner(d, "gpu0", self.cases)
            w.records[("p1", "", "cudnn")] = {}
            groups = queue.group_cases(self.cases)
            chunk = w.claim(groups, path)
            self.assertEqual([(pc["problem"], todo) for pc, todo in chunk],
                             [("p1", ["libtorch_cuda"])])
            w.records[("p1", "", "libtorch_cuda")] = {}
            self.assertEqual(w.take(groups)[0], "p2")  # p0 is gpu1's
            self.assertEqual(QueueRunner(d, "gpu1", self.cases, isolate=True).take(groups),
                             ["p0"])

    def test_time_split_section(self):
        slot = {"total": 900.0, "process_start": 100.0, "session": 0, "device_context": 0,
                "reference": 50.0, "prepare": 50.0, "compile": 100.0, "first_run": 100.0,
                "check": 50.0, "sampling": 400.0, "after_sampling": 0, "writing": None,
                "other": 50.0, "wall": 1000.0, "runner": 100.0}
        doc = {"path": "r.json", "run": {"wall_s": 2.0},
               "results": [{"backend": "cudnn", "slot_ms": slot},
                           {"backend": "cudnn", "slot_ms": {"total": None, "wall": 1000.0,
                                                            "runner": 0, "lost": 1000.0}},
                           {"backend": "old"}]}
        text = "\n".join(time_split_section([doc]))
        self.assertIn("| cudnn | 2 | 2.0 | 5.0% | 2.5% | 2.5% | 5.0% | 5.0% | 20.0% |", text)
        self.assertIn("Measuring (compile + first run + sampling): 30.0% of the cases' wall "
                      "time (0.6 of 2.0 s); sampling alone 20.0%. The run took 2.0 s", text)
        self.assertEqual(time_split_section([{"path": "x", "results": [{"backend": "a"}]}]), [])


def groups_names(groups):
    return [k[0] for k in groups]


if __name__ == "__main__":
    unittest.main(verbosity=1)
