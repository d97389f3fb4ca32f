#!/usr/bin/env python3
"""Tests of scripts/results/results_schema.py (version 1 -> 2 upgrade of conv descriptors and
params) and scripts/results/migrate_results.py (in-place upgrade of a run folder: JSON, cases.jsonl,
CSV; idempotent; bad input exits 2). That the upgraded descriptors are what myconv itself writes is
checked by the myconv_cli test, which has the binary.

Run: python3 tests/results/test_results_schema.py (CTest: results_schema).
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from results import results_schema  # noqa: E402

MIGRATE = os.path.join(ROOT, "scripts", "results", "migrate_results.py")


def v1_record(problem, backend="libtorch_cpu"):
    return {"suite": "conv", "backend": backend, "device": "cpu", "problem": problem,
            "name": "x", "dtype": "fp32", "status": "passed",
            "total_time_ms": {"median": 0.125},
            "params": {"mb": 2, "sh": 1, "sw": 2, "dh": 2, "dw": 2, "g": 1, "oh": 5},
            "command": f"myconv --problem {problem} --backend {backend}"}


class Upgrade(unittest.TestCase):
    def test_descriptors(self):
        cases = {
            "mb2ic4ih64oc8kh5": "mb2ic4ih64oc8kh5",
            "mb2ic5ih17oc7kh3ph2dh2": "mb2ic5ih17oc7kh3ph2dh1",
            "mb2ic4ih17oc8kh3dh1": "mb2ic4ih17oc8kh3",
            # a width field given alone: every width field written in version 2
            "mb2ic3ih13oc5kh3sw2ph1": "mb2ic3ih13iw13oc5kh3kw3sw2ph1pw1",
            "mb2ic4ih17iw13oc8kh7kw1ph3pw0": "mb2ic4ih17iw13oc8kh7kw1ph3",
            "g32mb1ic32ih112oc32kh3ph1dh2dtbf16nhwc": "g32mb1ic32ih112oc32kh3ph1dh1dtbf16nhwc",
            'mb2ic4ih8oc4kh3n"label: with spaces"': 'mb2ic4ih8oc4kh3n"label: with spaces"',
        }
        for v1, v2 in cases.items():
            self.assertEqual(results_schema.v1_to_v2_descriptor(v1), v2, v1)

    def test_bad_descriptor(self):
        for bad in ("mb2zz", "mb2ic4oc8", "mb2mb2ic4ih8oc4kh3", 'mb2ic4ih8oc4kh3n"open'):
            with self.assertRaises(results_schema.DescriptorError, msg=bad):
                results_schema.v1_to_v2_descriptor(bad)

    def test_record_and_document(self):
        doc = {"schema_version": 1, "results": [v1_record("mb2ic4ih8oc4kh3dh2")]}
        self.assertEqual(results_schema.upgrade(doc), 1)
        r = doc["results"][0]
        self.assertEqual(doc["schema_version"], 2)
        self.assertEqual(r["problem"], "mb2ic4ih8oc4kh3dh1")
        self.assertEqual(r["command"], "myconv --problem mb2ic4ih8oc4kh3dh1 --backend libtorch_cpu")
        self.assertEqual(list(r["params"]),
                         ["mb", "sh", "sw", "dh", "dw", "dilation_h", "dilation_w", "g", "oh"])
        self.assertEqual((r["params"]["dh"], r["params"]["dilation_h"]), (1, 2))
        self.assertEqual(r["total_time_ms"], {"median": 0.125})
        # A current document is left as it is.
        before = json.dumps(doc)
        self.assertEqual(results_schema.upgrade(doc), 2)
        self.assertEqual(json.dumps(doc), before)


class Migrate(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_migrate(self, *paths):
        return subprocess.run([sys.executable, MIGRATE, *paths], capture_output=True, text=True,
                              timeout=60)

    def test_run_folder(self):
        run = os.path.join(self.dir, "run")
        os.makedirs(os.path.join(run, "cases"))
        recs = [v1_record("mb2ic5ih17oc7kh3ph2dh2"), v1_record("mb2ic3ih13oc5kh3sw2ph1")]
        doc = {"schema_version": 1, "system": {"host": "h"}, "results": recs}
        with open(os.path.join(run, "results.json"), "w") as f:
            json.dump(doc, f, indent=2)
        with open(os.path.join(run, "cases", "0001.json"), "w") as f:
            json.dump(doc, f, indent=2)
        with open(os.path.join(run, "cases.jsonl"), "w") as f:
            f.writelines(json.dumps({"problem": r["problem"], "backend": r["backend"]}) + "\n"
                         for r in recs)
        with open(os.path.join(run, "results.csv"), "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["suite", "problem", "total_time_ms_median", "command"])
            for r in recs:
                w.writerow(["conv", r["problem"], "0.125", r["command"]])

        proc = self.run_migrate(run)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("4 file(s) upgraded", proc.stdout)
        with open(os.path.join(run, "results.json")) as f:
            new = json.load(f)
        self.assertEqual(new["schema_version"], 2)
        self.assertEqual(new["schema_migration"]["from_schema_version"], 1)
        self.assertEqual([r["problem"] for r in new["results"]],
                         ["mb2ic5ih17oc7kh3ph2dh1", "mb2ic3ih13iw13oc5kh3kw3sw2ph1pw1"])
        with open(os.path.join(run, "cases.jsonl")) as f:
            self.assertEqual(json.loads(f.readline())["problem"], "mb2ic5ih17oc7kh3ph2dh1")
        with open(os.path.join(run, "results.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(rows[1]["problem"], "mb2ic3ih13iw13oc5kh3kw3sw2ph1pw1")
        self.assertEqual(rows[1]["total_time_ms_median"], "0.125")
        self.assertIn("--problem mb2ic3ih13iw13oc5kh3kw3sw2ph1pw1 ", rows[1]["command"])

        # Idempotent: a second pass changes nothing.
        proc = self.run_migrate(run)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("0 file(s) upgraded", proc.stdout)

    def test_bad_input_exits_2(self):
        proc = self.run_migrate(os.path.join(self.dir, "missing"))
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            json.dump({"schema_version": 1, "results": [v1_record("mb2zz")]}, f)
        proc = self.run_migrate(bad)
        self.assertEqual(proc.returncode, 2, proc.stdout)
        self.assertIn("not a version-1 descriptor", proc.stderr)


class CorrectSource(unittest.TestCase):
    """scripts/results/correct_source.py: the corrected record, the wrong one kept, idempotent."""

    def test_correct_and_refuse(self):
        script = os.path.join(ROOT, "scripts", "results", "correct_source.py")
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                              text=True)
        if head.returncode != 0:
            self.skipTest("the source tree is not a git checkout")
        head = head.stdout.strip()
        d = tempfile.mkdtemp()
        try:
            path = os.path.join(d, "r.json")
            with open(path, "w") as f:
                json.dump({"schema_version": 2, "system": {"git_commit": "0123abcd-dirty"},
                           "systems": [{"part": "gpu0", "system": {"git_commit": "0123abcd-dirty"}},
                                       {"part": "gpu1", "system": {"git_commit": "0123abcd-dirty"}}],
                           "results": []}, f, indent=2)
            run = lambda *a: subprocess.run([sys.executable, script, *a], capture_output=True,
                                            text=True, timeout=60)
            p = run("--commit", head, "--reason", "the README says so", path)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(path) as f:
                doc = json.load(f)
            system = doc["system"]
            self.assertEqual(system["git_commit"], head[:12])
            # Each part of a merged run is corrected alike.
            for part in doc["systems"]:
                self.assertEqual(part["system"]["git_commit"], head[:12])
                self.assertEqual(part["system"]["source"]["recorded_git_commit"], "0123abcd-dirty")
            src = system["source"]
            self.assertEqual((src["commit"], src["origin"], src["dirty"]), (head, "corrected", False))
            self.assertEqual(src["recorded_git_commit"], "0123abcd-dirty")
            self.assertEqual(src["correction"], "the README says so")
            p = run("--commit", head, "--reason", "the README says so", path)
            self.assertIn("0 file(s) corrected", p.stdout)
            p = run("--commit", "no-such-commit", "--reason", "x", path)
            self.assertEqual(p.returncode, 2)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main()
