"""The cases of a run folder: their list (`--list-cases` of the suite's program; RUN/cases.jsonl,
written by output.py, read back here), the run's settings (RUN/run.json, likewise), their
identity (case_key), what RUN/cases/ has recorded of them, and the checks that a resumed folder
matches the program that resumes it (schema_version, source). A mixin of session.Runner, on its
state: args, run_dir, cases_dir, suite, program, config, cases, notes, records, csv_rows,
csv_header, system, models, schema_version, next_index."""

import csv
import json
import os
import shlex
import socket
import subprocess

from results.results_schema import SCHEMA_VERSION

from runner import gpus
from runner.common import (DEFAULT_TIMEOUT_S, PROGRAMS, QUICK_ARGS, UsageError, read_json_results,
                           shown, utc_now)
from runner.shard import load_times, parse_shard, shard_of


def case_key(rec):
    """A case's identity, which --resume matches records by: (descriptor, name, backend)."""
    return (rec.get("problem", ""), rec.get("name", ""), rec.get("backend", ""))


def read_csv_rows(path):
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            return list(reader.fieldnames or []), rows
    except (OSError, csv.Error):
        return [], []


def refreshed(old, new):
    """new, with what the runner added to old (its share of the case's slot) carried over."""
    slot, before = new.get("slot_ms"), old.get("slot_ms") or {}
    if not isinstance(slot, dict):  # a program that records no slot times
        if before:
            new["slot_ms"] = before
        return new
    # The program's total grew by its writing time: so does the wall (a synthesized record's
    # slot, total null, is the runner's own and stays).
    if "wall" in before and slot.get("total") is not None:
        slot["runner"] = before.get("runner") or 0.0
        slot["wall"] = (slot.get("total") or 0.0) + slot["runner"]
    return new


class CasesMixin:
    # ---- the list and the settings (new run, resume) -----------------------------------------

    def list_cases(self, myconv, args):
        cmd = [myconv, "--list-cases"] + args
        rc, stdout, stderr = self.run_quietly(cmd)
        prog = self.program
        if rc == 2:
            msg = (stderr.strip().splitlines() or [f"{prog} rejected the options"])[-1]
            raise UsageError(msg.replace(f"{prog}: error: ", "", 1))
        if rc != 0:
            tail = " ".join(stderr.strip().splitlines()[-3:])
            raise RuntimeError(f"'{shlex.join(cmd)}' exited with {rc}: {tail}")
        # Shape-file tokens myconv does not run as written (benchdnn options, repeated lines).
        self.notes = [line.replace(f"{prog}: note: ", "", 1) for line in stderr.splitlines()
                      if line.startswith(f"{prog}: note: ")]
        cases = []
        for line in stdout.splitlines():
            if line.startswith("{"):
                try:
                    cases.append(json.loads(line))
                except ValueError:
                    pass
        return cases

    def source_of(self, myconv):
        """The source record of a myconv build (`myconv --source-info`): what every result of the
        run folder names (results/README.md, system.source)."""
        p = subprocess.run([myconv, "--source-info"], capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
        if p.returncode != 0:
            tail = " ".join(p.stderr.strip().splitlines()[-2:])
            raise RuntimeError(f"'{myconv} --source-info' exited with {p.returncode}: {tail}")
        try:
            return json.loads(p.stdout)
        except ValueError as e:
            raise RuntimeError(f"'{myconv} --source-info' printed no JSON ({e})")

    def write_source_diff(self, myconv, source):
        """RUN/source.diff: the built tree's difference from its commit, once per run folder."""
        if source.get("diff_bytes"):
            cmd = [myconv, "--write-source-diff", os.path.join(self.run_dir, "source.diff")]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                               stdin=subprocess.DEVNULL)
            if p.returncode != 0:
                tail = " ".join(p.stderr.strip().splitlines()[-2:])
                raise RuntimeError(f"'{shlex.join(cmd)}' exited with {p.returncode}: {tail}")

    def load_config(self):
        path = os.path.join(self.run_dir, "run.json")
        try:
            with open(path, encoding="utf-8") as f:
                self.config = json.load(f)
            with open(os.path.join(self.run_dir, "cases.jsonl"), encoding="utf-8") as f:
                self.cases = [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError) as e:
            raise UsageError(f"--resume: '{self.run_dir}' is not a run folder of this script "
                             f"({e.__class__.__name__}: {e})")
        suite = self.config.get("suite", "conv")  # folders from before the op suite: conv
        if suite not in PROGRAMS:
            raise UsageError(f"--resume: '{self.run_dir}' holds a run of suite '{suite}', which "
                             f"this script does not know")
        if self.config.get("merged_from"):
            raise UsageError(f"--resume: '{self.run_dir}' was merged from shards by "
                             f"merge_results.py; resume the shards, then merge them again")
        self.suite, self.program = suite, PROGRAMS[suite]
        if getattr(self, "log", None):
            self.log.tag = f"[{self.program}]"
        # Case keys hold descriptors, whose form changed with the schema: an older folder's keys
        # would not match what myconv records now.
        version = read_json_results(os.path.join(self.run_dir, "results.json")) or {}
        version = version.get("schema_version", self.config.get("schema_version"))
        if version not in (None, SCHEMA_VERSION):
            raise UsageError(f"--resume: '{self.run_dir}' was written with schema_version "
                             f"{version}; upgrade it first: scripts/results/migrate_results.py "
                             f"{shown(self.run_dir)}")
        # One run folder, one source: a myconv built from other source would mix two programs'
        # results under one record. (--merge-only runs no program and may be given none.)
        if not self.args.myconv:
            return
        before = self.config.get("source")
        now = self.source_of(self.args.myconv)
        same = ("commit", "origin", "diff_sha256", "modified_since_stamp")
        if before is not None and any(before.get(k) != now.get(k) for k in same):
            def name(s):
                diff = (", difference " + str(s.get("diff_sha256"))[:12]
                        if s.get("diff_bytes") else "")
                return f"{s.get('commit_short')} ({s.get('origin')}{diff})"
            raise UsageError(f"--resume: '{self.run_dir}' was run by a {self.program} built from "
                             f"{name(before)}, this one is built from {name(now)}; resume with "
                             f"that build, or start a new run")

    def new_config(self):
        a = self.args
        grid, extra = list(a.grid_arg or []), list(a.extra_arg or [])
        self.cases = self.list_cases(a.myconv, grid + extra)
        self.full_cases = self.cases
        # --shard I/N: this shard's part of the list (shard.py), the same on every host.
        shard = None
        if a.shard:
            index, count = parse_shard(a.shard)
            times = load_times(a.cost_from) if a.cost_from else None
            cost = f"times of {os.path.abspath(a.cost_from)}" if times else "flop"
            self.cases, shard = shard_of(self.cases, index, count, times, cost)
        self.config = {
            "runner": "scripts/run_all_experiments.sh", "suite": self.suite,
            "label": a.label or "custom",
            "created_utc": utc_now(), "host": socket.gethostname(), "grid_args": grid,
            "extra_args": extra, "quick": a.quick,
            "timeout_s": a.timeout if a.timeout is not None else DEFAULT_TIMEOUT_S,
            "schema_version": SCHEMA_VERSION, "notes": self.notes,
            "source": self.source_of(a.myconv),
            # The GPU every GPU result of the run is on, where that is certain (gpus.py).
            "gpu": None if a.gpus else gpus.the_single_gpu(),
            # One program process per problem (--isolate), or many back to back (isolation.py).
            "isolate": bool(a.isolate)}
        if a.hf_reference:  # the transformer suite's reference, after the cases (reference.py)
            self.config["hf_reference"] = True
        if a.trust_check:  # Python PyTorch beside our LibTorch figures, after the cases
            self.config["trust_check"] = True
        if a.inductor_reference:  # PyTorch Inductor on the GPU conv problems, after the cases
            self.config["inductor_reference"] = True
        if a.trace:  # Chrome traces of every case, in the run folder (workers share it)
            self.config["trace_dir"] = os.path.join(os.path.abspath(self.run_dir), "traces")
        if shard:
            self.config["shard"] = shard
        if a.plan:
            return
        self.write_source_diff(a.myconv, self.config["source"])
        if a.gpus:
            self.plan_workers()  # writes the run's and the workers' config
        else:
            self.write_config()

    def timing_args(self):
        extra = self.config["extra_args"]
        given = {e.split("=", 1)[0] for e in extra if e.startswith("--")}
        out = []
        if self.config.get("quick"):
            for opt, val in QUICK_ARGS:
                if opt not in given:  # the user's own value wins (CLI11 refuses repeats)
                    out += [opt, val]
        if self.config.get("trace_dir") and "--trace-dir" not in given:
            out += ["--trace-dir", self.config["trace_dir"]]
        return out + extra

    # ---- what RUN/cases/ has recorded ------------------------------------------------------

    def load_case_files(self):
        """Everything recorded so far, from RUN/cases/ (myconv's files and synthesized ones)."""
        wanted = {case_key(c) for c in self.cases}
        os.makedirs(self.cases_dir, exist_ok=True)
        names = sorted(os.listdir(self.cases_dir))
        for name in names:
            stem = name.split(".")[0].split("-")[0]
            if stem.isdigit():
                self.next_index = max(self.next_index, int(stem) + 1)
        for name in names:
            path = os.path.join(self.cases_dir, name)
            if name.endswith(".json"):
                self.take_json(path, wanted)
            elif name.endswith(".csv"):
                self.take_csv(path, wanted)
        # The runner's view of each slot (slot_ms.runner; isolation.py note_slots) is in the
        # results.json it rewrote after each case, not in the program's files.
        before = read_json_results(os.path.join(self.run_dir, "results.json")) or {}
        for rec in before.get("results", []):
            mine = self.records.get(case_key(rec))
            slot = rec.get("slot_ms")
            if mine is not None and isinstance(slot, dict) and "runner" in slot:
                self.records[case_key(rec)] = refreshed(rec, mine)

    def take_json(self, path, wanted=None):
        doc = read_json_results(path)
        if doc is None:
            return []
        if doc.get("system") and self.system is None:
            self.system = doc["system"]
            self.schema_version = doc.get("schema_version", SCHEMA_VERSION)
        # The transformer suite's models: each invocation records those it ran (system.models);
        # the run's system names every one.
        for m in (doc.get("system") or {}).get("models") or []:
            if isinstance(m, dict) and m.get("name") not in self.models:
                self.models[m.get("name")] = m
        gpu = (getattr(self, "config", None) or {}).get("gpu")
        new = []
        for rec in doc["results"]:
            k = case_key(rec)
            if gpu and rec.get("device") == "cuda":
                rec.setdefault("gpu", gpu)
            if wanted is not None and k not in wanted:
                continue
            if k not in self.records:
                self.records[k] = rec
                self.record_file[k] = path
                new.append(rec)
            elif self.record_file.get(k) == path and rec != self.records[k]:
                # The program's later rewrite of a record it wrote: the slot's `writing` is
                # known from the rewrite after the case's own (core/driver.hpp finish_case).
                self.records[k] = refreshed(self.records[k], rec)
        return new

    def take_csv(self, path, wanted=None):
        header, rows = read_csv_rows(path)
        if header:
            self.csv_header = header  # files are read in order: the newest binary's header wins
        for row in rows:
            k = (row.get("problem", ""), row.get("name", ""), row.get("backend", ""))
            if (wanted is None or k in wanted) and k not in self.csv_rows:
                self.csv_rows[k] = row
