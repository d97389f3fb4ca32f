#!/usr/bin/env python3
"""Runs the cases of one run folder through its suite's program (myconv for the conv suite, myops
for the op suite); scripts/run_all_experiments.sh calls it after the set-up and the build (users
call that script, whose --help has the options).

  run_cases.py --run-dir RUN --myconv BIN [--suite conv|ops] [--grid-arg=ARG ...]
               [--extra-arg=ARG ...] [--quick] [--timeout S] [--label TEXT] [--commit] [--verbose]
               [--prepare-only]
  run_cases.py --run-dir RUN --myconv BIN --resume|--prepared [--timeout S] [--commit] [--verbose]
  run_cases.py --run-dir RUN --merge-only        rebuild results.json/csv from RUN/cases/
(--myconv names the suite's program, myops too; --prepare-only writes run.json and cases.jsonl
and stops, --prepared then runs them: run_all_experiments.sh --suite all lists every suite's
cases before it runs any, so that bad options fail at once.)

Design (why it is built this way):
- The case list comes from myconv itself (`--list-cases`: the settings expanded into problems, one
  JSON identity record per (problem, backend)), so the runner never re-implements the expansion,
  and N, the ETA and --resume work on exactly the cases myconv would run. It is saved as
  RUN/cases.jsonl with the settings in RUN/run.json; --resume reads both back.
- myconv runs once per problem (descriptor with dtype and layout) with all its backends that are
  not recorded yet, so the inputs and the float64 reference are made once per problem and
  libraries load once. myconv rewrites its --json/--csv (atomically) after every case, into
  RUN/cases/NNNN.json/.csv; the runner polls that file, so it knows each case as it finishes.
- Per-case time limit: a watchdog kills myconv's process group (SIGTERM, SIGKILL after a grace
  period, like `timeout --kill-after`) when no case has finished for --timeout seconds. Because
  myconv runs the backends in the listed order and records each one at once, the first missing
  case is the one that hung or crashed: it gets a synthesized record (status `timeout`, or
  `failed` with `crashed: signal N` / `out of memory`) in RUN/cases/NNNN-runner.json, and the
  remaining backends of that problem run in a new invocation. Nothing is run twice.
- After every case RUN/results.json and RUN/results.csv are rewritten from all case files (temp
  file + rename), in case-list order: a kill at any moment leaves valid files of the finished
  cases, and --resume runs only the missing ones. CSV rows are myconv's own (core's write_csv),
  re-keyed by case; only synthesized records are flattened here, under myconv's header.
- Progress goes to the console and to RUN/all_experiments.txt as one plain line per case (no
  carriage returns, flushed per line: readable under nohup); myconv's full output goes to the log
  file (and to the console with --verbose).
- The op suite scores bandwidth against the machine's measured limits (copy bandwidth per device,
  matmul ceiling per dtype), which myops measures at its start: seconds per invocation, and a
  slightly different figure each time. The runner has them measured once per run folder
  (RUN/limits.json, one myops invocation on a tiny matmul per dtype, kept for --resume), runs
  every case with --no-peaks and writes the measured limits into results.json's `system`, so
  that every case of the run is scored against the same figures (scripts/analysis/ops_report.py
  recomputes the efficiencies from them). Should that measurement fail, each invocation measures
  its own, as myops does alone.
"""

import argparse
import collections
import datetime
import fcntl
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_schema import SCHEMA_VERSION  # noqa: E402

PROG = "run_all_experiments.sh"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# --quick: a smoke run, a few samples per case.
QUICK_ARGS = [("--warmup", "1"), ("--min-iters", "3"), ("--min-time-ms", "0"),
              ("--max-time-ms", "20")]
DEFAULT_TIMEOUT_S = 900
# The program of each suite, and how a descriptor carries a name (conv: n"x", ops: :n"x").
PROGRAMS = {"conv": "myconv", "ops": "myops"}
NAME_SUFFIX = {"conv": 'n"{}"', "ops": ':n"{}"'}
LIMITS_PROBLEM = "matmul:m64n64k64"  # the tiny case of the op suite's limits invocation
KILL_GRACE_S = 5  # SIGTERM first; SIGKILL this long after (timeout --kill-after)
POLL_S = 0.1
TIME_FIGURES = ("cpu_time_ms", "gpu_time_ms", "total_time_ms", "thread_cpu_time_ms")
# Columns of core's write_csv (core/printers.cpp results_to_csv), used only when no myconv CSV
# exists yet (every invocation died before its first case); otherwise myconv's header is used.
FALLBACK_CSV_HEADER = (
    "suite,backend,device,problem,name,dtype,status,reason,algorithm,workspace_bytes,"
    "compile_time_ms,first_run_ms,"
    + ",".join(f"{f}_{s}" for f in ("cpu_time_ms", "gpu_time_ms", "total_time_ms")
               for s in ("median", "min", "mean", "p10", "p90", "cv", "samples"))
    + ",correct,max_abs_err,rel_l2_err,atol,rtol,mismatches,flop,bytes,gflop_per_s,timing_mode,"
    "runs_per_sample,cold_cache,throttled,sm_mhz_before,sm_mhz_after,command").split(",")


class UsageError(Exception):
    pass


class Stopped(Exception):
    """A signal arrived while the case list was being made."""


def child_wrapper():
    """Line-buffered output (the log follows the run), and myconv dies with the runner even when
    the runner is killed with SIGKILL (setpriv's parent-death signal survives exec)."""
    wrap = ["stdbuf", "-oL", "-eL"] if shutil.which("stdbuf") else []
    if shutil.which("setpriv"):
        wrap = ["setpriv", "--pdeathsig", "KILL", "--"] + wrap
    return wrap


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def hms(seconds):
    if seconds is None:
        return "--:--:--"
    s = int(round(seconds))
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def write_atomic(path, text):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def shown(path):
    """A path as the user would type it: relative when under the current folder."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def case_key(rec):
    return (rec.get("problem", ""), rec.get("name", ""), rec.get("backend", ""))


def csv_field(s):
    # The quoting rule of core/printers.cpp csv_field.
    if not any(c in s for c in ',"\n\r'):
        return s
    return '"' + s.replace('"', '""') + '"'


def csv_value(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.9g}"
    if isinstance(v, (dict, list)):
        return ""
    return str(v)


def flatten(rec, header):
    """A CSV row (column -> text) for a record, under any header of core's write_csv."""
    corr = rec.get("correctness") or {}
    clocks = rec.get("clocks") or {}
    row = {}
    for col in header:
        v = None
        if col in rec and not isinstance(rec[col], (dict, list)):
            v = rec[col]
        elif col == "correct":
            v = corr.get("passed")
        elif col in ("max_abs_err", "rel_l2_err", "mismatches"):
            v = corr.get(col)
        elif col in ("atol", "rtol"):
            v = (corr.get("tolerance") or {}).get(col)
        elif col.startswith("sm_mhz_") or col.startswith("mem_mhz_"):
            v = clocks.get(col)
        else:
            for fig in TIME_FIGURES:
                if col.startswith(fig + "_") and isinstance(rec.get(fig), dict):
                    v = rec[fig].get(col[len(fig) + 1:])
        row[col] = csv_value(v)
    return row


def read_json_results(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("results"), list) else None


def read_csv_rows(path):
    import csv
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            return list(reader.fieldnames or []), rows
    except (OSError, csv.Error):
        return [], []


def oom_kill_count():
    """The cgroup's OOM-kill counter (v2 memory.events, v1 memory.oom_control), None if unknown."""
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as f:
                for line in f:
                    k, _, v = line.partition(" ")
                    if k == "oom_kill":
                        return int(v)
        except (OSError, ValueError):
            pass
    return None


class Log:
    """Console and RUN/all_experiments.txt, whole lines, flushed at once."""

    def __init__(self, path, verbose):
        self.file = open(path, "a", encoding="utf-8", buffering=1)
        self.verbose = verbose
        self.console = True
        self.lock = threading.Lock()

    def _console(self, text):
        # A console that went away (closed pipe, terminal gone) does not stop the run: the log
        # file goes on.
        if not self.console:
            return
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except (OSError, ValueError):
            self.console = False

    def say(self, msg):
        with self.lock:
            text = "".join(line + "\n" for line in msg.splitlines() or [""])
            self.file.write(text)
            self._console(text)

    def detail(self, line):
        """myconv's output: log file; console too with --verbose."""
        line = line.replace("\r", "")
        with self.lock:
            self.file.write(line + "\n")
            if self.verbose:
                self._console(line + "\n")


class Runner:
    def __init__(self, args):
        self.args = args
        self.run_dir = os.path.abspath(args.run_dir)
        self.cases_dir = os.path.join(self.run_dir, "cases")
        self.stop_signal = None
        self.child = None
        self.records = {}   # case key -> result record
        self.csv_rows = {}  # case key -> CSV row (column -> text) written by myconv
        self.csv_header = None
        self.system = None
        self.schema_version = SCHEMA_VERSION
        self.next_index = 1
        self.session_start = time.monotonic()
        self.session_done = 0
        self.done_before = 0
        self.suite = args.suite or "conv"  # a resumed run's own suite comes from run.json
        self.program = PROGRAMS[self.suite]
        self.limits = None  # the op suite's measured limits (system fields), once per run

    # ---- set-up ---------------------------------------------------------------------------

    def run_quietly(self, cmd, timeout=None):
        """(exit status, stdout, stderr) of a child; output through files (no pipe to fill); a
        signal to the runner stops it too (Stopped); past timeout seconds it is killed (None)."""
        start, timed_out = time.monotonic(), False
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen(child_wrapper() + cmd, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            while proc.poll() is None:
                if self.stop_signal is not None:
                    self.kill_child(proc)
                    raise Stopped()
                if timeout and time.monotonic() - start > timeout:
                    self.kill_child(proc)
                    timed_out = True
                    break
                time.sleep(POLL_S)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read(), err.read()
        return (None if timed_out else proc.returncode), stdout, stderr

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
        p = subprocess.run([myconv, "--source-info"], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            tail = " ".join(p.stderr.strip().splitlines()[-2:])
            raise RuntimeError(f"'{myconv} --source-info' exited with {p.returncode}: {tail}")
        return json.loads(p.stdout)

    def write_source_diff(self, myconv, source):
        """RUN/source.diff: the built tree's difference from its commit, once per run folder."""
        if source.get("diff_bytes"):
            subprocess.run([myconv, "--write-source-diff",
                            os.path.join(self.run_dir, "source.diff")], check=True, timeout=120)

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
        self.suite, self.program = suite, PROGRAMS[suite]
        # Case keys hold descriptors, whose form changed with the schema: an older folder's keys
        # would not match what myconv records now.
        version = read_json_results(os.path.join(self.run_dir, "results.json")) or {}
        version = version.get("schema_version", self.config.get("schema_version"))
        if version not in (None, SCHEMA_VERSION):
            raise UsageError(f"--resume: '{self.run_dir}' was written with schema_version "
                             f"{version}; upgrade it first: scripts/migrate_results.py "
                             f"{shown(self.run_dir)}")
        # One run folder, one source: a myconv built from other source would mix two programs'
        # results under one record.
        before = self.config.get("source")
        now = self.source_of(self.args.myconv)
        same = ("commit", "origin", "diff_sha256", "modified_since_stamp")
        if before is not None and any(before.get(k) != now.get(k) for k in same):
            def name(s):
                return (f"{s.get('commit_short')} ({s.get('origin')}"
                        f"{', difference ' + str(s.get('diff_sha256'))[:12] if s.get('diff_bytes') else ''})")
            raise UsageError(f"--resume: '{self.run_dir}' was run by a {self.program} built from "
                             f"{name(before)}, this one is built from {name(now)}; resume with "
                             f"that build, or start a new run")

    def new_config(self):
        a = self.args
        grid, extra = list(a.grid_arg or []), list(a.extra_arg or [])
        self.cases = self.list_cases(a.myconv, grid + extra)
        self.config = {
            "runner": "scripts/run_all_experiments.sh", "suite": self.suite,
            "label": a.label or "custom",
            "created_utc": utc_now(), "host": socket.gethostname(), "grid_args": grid,
            "extra_args": extra, "quick": a.quick,
            "timeout_s": a.timeout if a.timeout is not None else DEFAULT_TIMEOUT_S,
            "schema_version": SCHEMA_VERSION, "notes": self.notes,
            "source": self.source_of(a.myconv)}
        self.write_source_diff(a.myconv, self.config["source"])
        os.makedirs(self.cases_dir, exist_ok=True)
        write_atomic(os.path.join(self.run_dir, "cases.jsonl"),
                     "".join(json.dumps(c) + "\n" for c in self.cases))
        write_atomic(os.path.join(self.run_dir, "run.json"),
                     json.dumps(self.config, indent=2) + "\n")

    def measure_limits(self, measure=True):
        """The op suite's limits, once per run folder (see the module docstring): read back from
        RUN/limits.json when an earlier session measured them, else measured now (measure)."""
        if self.suite != "ops":
            return
        path = os.path.join(self.run_dir, "limits.json")

        def limits_in(doc):
            system = (doc or {}).get("system") or {}
            bw = system.get("bandwidth")
            if not isinstance(bw, dict) or "why" in bw or not (bw.get("cpu") or bw.get("cuda")):
                return None
            return {k: system[k] for k in ("bandwidth", "matmul_ceiling") if k in system}

        self.limits = limits_in(read_json_results(path))
        if self.limits or not measure:
            return
        dtypes = sorted({c.get("dtype") or "fp32" for c in self.cases})
        backends = list(dict.fromkeys(c["backend"] for c in self.cases))
        cmd = [self.args.myconv, "--problem", LIMITS_PROBLEM, "--dtype", ",".join(dtypes),
               "--backend", ",".join(backends), "--json", path, "--no-source-diff"]
        for opt, val in QUICK_ARGS:
            cmd += [opt, val]
        self.log.say(f"[myconv] measuring the machine's limits once for the run (copy bandwidth, "
                     f"matmul ceiling for {', '.join(dtypes)}) into limits.json")
        self.log.detail(f"$ {shlex.join(cmd)}")
        rc, stdout, stderr = self.run_quietly(cmd, self.timeout or DEFAULT_TIMEOUT_S)
        for line in (stdout + stderr).splitlines():
            self.log.detail(line)
        # myops writes the system, limits included, before its first case: a case that crashed
        # afterwards leaves them usable.
        self.limits = limits_in(read_json_results(path))
        if not self.limits:
            last = (stderr.strip().splitlines() or stdout.strip().splitlines() or [""])[-1]
            self.log.say(f"[myconv] note: the limits could not be measured once ({self.program} "
                         f"exit {rc}: {last}); every case measures its own")

    def timing_args(self):
        extra = self.config["extra_args"]
        given = {e.split("=", 1)[0] for e in extra if e.startswith("--")}
        out = []
        if self.config.get("quick"):
            for opt, val in QUICK_ARGS:
                if opt not in given:  # the user's own value wins (CLI11 refuses repeats)
                    out += [opt, val]
        return out + extra

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

    def take_json(self, path, wanted=None):
        doc = read_json_results(path)
        if doc is None:
            return []
        if doc.get("system") and self.system is None:
            self.system = doc["system"]
            self.schema_version = doc.get("schema_version", SCHEMA_VERSION)
        new = []
        for rec in doc["results"]:
            k = case_key(rec)
            if (wanted is None or k in wanted) and k not in self.records:
                self.records[k] = rec
                new.append(rec)
        return new

    def take_csv(self, path, wanted=None):
        header, rows = read_csv_rows(path)
        if header:
            self.csv_header = header  # files are read in order: the newest binary's header wins
        for row in rows:
            k = (row.get("problem", ""), row.get("name", ""), row.get("backend", ""))
            if (wanted is None or k in wanted) and k not in self.csv_rows:
                self.csv_rows[k] = row

    # ---- results --------------------------------------------------------------------------

    def write_results(self):
        keys = [case_key(c) for c in self.cases]
        results = [self.records[k] for k in keys if k in self.records]
        system = self.system or {"host": socket.gethostname(), "utc_time": utc_now()}
        if self.limits:  # the op suite's limits, measured once for the whole run
            system.update(self.limits)
        if isinstance(system.get("source"), dict):
            has_diff = os.path.exists(os.path.join(self.run_dir, "source.diff"))
            system["source"]["diff_file"] = "source.diff" if has_diff else None
        run = {"runner": "scripts/run_all_experiments.sh", "suite": self.suite,
               "label": self.config.get("label"), "cases": len(keys), "recorded": len(results),
               "complete": len(results) == len(keys),
               f"{self.program}_args": self.config["grid_args"] + self.timing_args(),
               "timeout_s": self.config.get("timeout_s")}
        if self.limits:
            run["limits_file"] = "limits.json"
        doc = {"schema_version": self.schema_version, "system": system, "run": run,
               "results": results}
        write_atomic(os.path.join(self.run_dir, "results.json"),
                     json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        header = self.csv_header or FALLBACK_CSV_HEADER
        lines = [",".join(header)]
        for k in keys:
            if k not in self.records:
                continue
            row = self.csv_rows.get(k) or flatten(self.records[k], header)
            lines.append(",".join(csv_field(row.get(c) or "") for c in header))
        write_atomic(os.path.join(self.run_dir, "results.csv"), "\n".join(lines) + "\n")

    # ---- running --------------------------------------------------------------------------

    def progress(self, rec):
        # Records arrive in batches (one poll may see several); count them one by one.
        self.session_done += 1
        done = self.done_before + self.session_done
        total = len(self.cases)
        elapsed = time.monotonic() - self.session_start
        eta = elapsed / self.session_done * (total - done) if self.session_done else None
        status = rec.get("status", "?")
        if status == "passed":
            fig = rec.get("gpu_time_ms") or rec.get("total_time_ms") or {}
            med = fig.get("median")
            what = f"{status} {med:.4g} ms" if isinstance(med, (int, float)) else status
        else:
            reason = (rec.get("reason") or "").splitlines()[0] if rec.get("reason") else ""
            if len(reason) > 100:
                reason = reason[:97] + "..."
            what = f"{status}: {reason}" if reason else status
        self.log.say(f"[{done}/{total}] elapsed {hms(elapsed)} eta {hms(eta)} "
                     f"{rec.get('problem')} {rec.get('backend')}: {what}")

    def kill_child(self, proc):
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()

    def invoke(self, problem_case, backends):
        """Runs one myconv invocation; returns the backends still to run after it."""
        index = self.next_index
        self.next_index += 1
        base = os.path.join(self.cases_dir, f"{index:04d}")
        json_path, csv_path = base + ".json", base + ".csv"
        desc = problem_case["problem"]
        if problem_case.get("name"):
            desc += NAME_SUFFIX[self.suite].format(problem_case["name"])
        cmd = [self.args.myconv, "--problem", desc, "--backend", ",".join(backends),
               "--json", json_path, "--csv", csv_path, "--no-source-diff"] + self.timing_args()
        if self.limits:
            cmd.append("--no-peaks")
        self.log.detail(f"$ {shlex.join(cmd)}")
        oom_before = oom_kill_count()
        proc = subprocess.Popen(child_wrapper() + cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        self.child = proc
        tail = collections.deque(maxlen=12)

        def pump():
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                tail.append(line)
                self.log.detail(line)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        wanted = {(problem_case["problem"], problem_case.get("name", ""), b) for b in backends}
        last_mtime = None
        last_progress = time.monotonic()
        timed_out = False
        timeout = self.timeout

        def poll_json():
            nonlocal last_mtime, last_progress
            try:
                st = os.stat(json_path)
            except OSError:
                return
            sig = (st.st_mtime_ns, st.st_size, st.st_ino)
            if sig == last_mtime:
                return
            last_mtime = sig
            new = self.take_json(json_path, wanted)
            if new:
                self.take_csv(csv_path, wanted)
                self.write_results()
                last_progress = time.monotonic()
                for rec in new:
                    self.progress(rec)

        while True:
            rc = proc.poll()
            poll_json()
            if rc is not None:
                break
            if self.stop_signal is not None:
                self.kill_child(proc)
                reader.join(2)
                poll_json()
                self.child = None
                return None
            if timeout and time.monotonic() - last_progress > timeout:
                timed_out = True
                self.kill_child(proc)
                rc = proc.returncode
                break
            time.sleep(POLL_S)
        reader.join(5)
        self.child = None
        last_mtime = None
        poll_json()
        missing = [b for b in backends if (problem_case["problem"], problem_case.get("name", ""),
                                           b) not in self.records]
        if not missing:
            return []
        culprit = missing[0]
        status, reason = self.classify(rc, timed_out, tail, oom_before)
        template = next(c for c in self.cases if case_key(c) == (
            problem_case["problem"], problem_case.get("name", ""), culprit))
        rec = dict(template)
        rec["status"] = status
        rec["reason"] = reason
        rec["extra"] = dict(rec.get("extra") or {})
        rec["extra"]["runner"] = {
            f"{self.program}_exit": rc,
            "output_tail": [line for line in tail if line.strip()][-8:],
            "invocation": shlex.join(cmd)}
        synth = base + "-runner.json"
        write_atomic(synth, json.dumps({"schema_version": self.schema_version, "system": {},
                                        "results": [rec]}, indent=2) + "\n")
        self.take_json(synth)
        self.write_results()
        self.progress(rec)
        return missing[1:]

    def classify(self, rc, timed_out, tail, oom_before):
        if timed_out:
            return "timeout", (f"no result within {self.timeout:g} s (the per-case limit, "
                               f"--timeout); {self.program} was killed")
        text = "\n".join(tail)
        if rc is not None and rc < 0:
            sig = -rc
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = "?"
            # SIGKILL not sent by the runner: the kernel's OOM killer, confirmed by the cgroup's
            # counter where it can be read.
            oom_after = oom_kill_count()
            if sig == signal.SIGKILL and oom_before is not None and oom_after is not None:
                if oom_after > oom_before:
                    return "failed", ("out of memory: killed by the kernel's OOM killer "
                                      f"(signal {sig})")
            elif sig == signal.SIGKILL:
                return "failed", (f"out of memory: killed by signal {sig} ({name}), presumably by "
                                  "the kernel's OOM killer")
            return "failed", f"crashed: signal {sig} ({name})"
        last = next((line for line in reversed(tail) if line.strip()), "")
        if any(s in text for s in ("bad_alloc", "out of memory", "GiB of host memory")):
            return "failed", f"out of memory: {last.strip()}"
        if rc:
            return "failed", f"{self.program} exited with code {rc}: {last.strip()}"
        return "failed", f"{self.program} exited without a result for this case"

    # ---- top level ------------------------------------------------------------------------

    def on_signal(self, signum, _frame):
        self.stop_signal = signum

    def run(self):
        a = self.args
        os.makedirs(self.run_dir, exist_ok=True)
        self.lock_file = open(os.path.join(self.run_dir, ".runner.lock"), "w")
        try:
            fcntl.flock(self.lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UsageError(f"'{self.run_dir}' is in use by another runner")
        self.log = Log(os.path.join(self.run_dir, "all_experiments.txt"), a.verbose)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if s == signal.SIGHUP and signal.getsignal(s) == signal.SIG_IGN:
                continue  # nohup: keep ignoring hang-ups
            signal.signal(s, self.on_signal)
        if a.merge_only:
            self.load_config()
            self.measure_limits(measure=False)
            self.load_case_files()
            self.write_results()
            return 0
        if a.resume or a.prepared:
            self.load_config()
        else:
            try:
                self.new_config()
            except (UsageError, Stopped):
                if a.fresh:  # a run folder this command made, holding only the build log
                    self.lock_file.close()
                    shutil.rmtree(self.run_dir, ignore_errors=True)
                raise
            if a.prepare_only:  # the cases are listed; a later --prepared runs them
                os.unlink(os.path.join(self.run_dir, ".runner.lock"))
                return 0
        if a.timeout is not None:
            self.config["timeout_s"] = a.timeout
        self.timeout = float(self.config.get("timeout_s") or 0)
        self.measure_limits(measure=False)
        self.load_case_files()
        self.write_results()
        self.done_before = sum(1 for c in self.cases if case_key(c) in self.records)

        total = len(self.cases)
        done = sum(1 for c in self.cases if case_key(c) in self.records)
        groups = collections.OrderedDict()
        for c in self.cases:
            groups.setdefault((c["problem"], c.get("name", "")), []).append(c)
        backends = list(dict.fromkeys(c["backend"] for c in self.cases))
        rel = shown(self.run_dir)
        self.log.say(f"[myconv] {'resuming' if a.resume else 'run'} {self.config.get('label')}: "
                     f"{total} cases ({len(groups)} problem(s) x {len(backends)} backend(s): "
                     f"{', '.join(backends)}), {done} recorded, "
                     f"timeout {self.timeout:g} s per case, "
                     f"{self.program} {shlex.join(self.timing_args()) or '(default timing)'}")
        self.log.say(f"[myconv] run folder {rel} (console log in all_experiments.txt)")
        for note in self.config.get("notes", []):
            self.log.say(f"[myconv] note: {note}")
        if done < total and not self.limits:
            self.measure_limits()

        for (problem, name), group in groups.items():
            todo = [c["backend"] for c in group if case_key(c) not in self.records]
            while todo and self.stop_signal is None:
                todo = self.invoke(group[0], todo)
                if todo is None:
                    break
            if self.stop_signal is not None:
                break

        self.write_results()
        counts = collections.Counter(self.records[case_key(c)]["status"] for c in self.cases
                                     if case_key(c) in self.records)
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        recorded = sum(counts.values())
        if self.stop_signal is not None:
            name = signal.Signals(self.stop_signal).name
            self.log.say(f"[myconv] stopped by {name}: {recorded} of {total} cases recorded "
                         f"({summary or 'none'}) in {rel}/results.json and results.csv")
            self.log.say(f"[myconv] finish with: scripts/run_all_experiments.sh --resume {rel}")
            return 128 + self.stop_signal
        self.log.say(f"[myconv] done in {hms(time.monotonic() - self.session_start)}: "
                     f"{recorded} cases ({summary or 'none'}); "
                     f"{rel}/results.json, results.csv")
        self.report()
        try:  # the lock stays held (on the open file) until exit; the folder is left clean
            os.unlink(os.path.join(self.run_dir, ".runner.lock"))
        except OSError:
            pass
        return self.commit(summary) if a.commit else 0

    def report(self):
        script = os.path.join(ROOT, "scripts", "analyze_results.py")
        if not os.path.exists(script):
            self.log.say("[myconv] report skipped: scripts/analyze_results.py is not there")
            return
        cmd = [sys.executable, script, os.path.join(self.run_dir, "results.json"),
               "--output-dir", self.run_dir]
        self.log.detail(f"$ {shlex.join(cmd)}")
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", stdin=subprocess.DEVNULL)
        for line in p.stdout.splitlines():
            self.log.detail(line)
        rel = shown(self.run_dir)
        if p.returncode != 0:
            last = (p.stdout.strip().splitlines() or [""])[-1]
            self.log.say(f"[myconv] report failed (exit {p.returncode}: {last}); "
                         "the results are kept")
        else:
            self.log.say(f"[myconv] report: {rel}/report.md, {rel}/plots/")

    def commit(self, summary):
        def git(*args):
            return subprocess.run(["git", "-C", self.run_dir] + list(args),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        top = git("rev-parse", "--show-toplevel")
        if top.returncode != 0:
            self.log.say(f"[myconv] commit failed: {self.run_dir} is not in a git repository")
            return 1
        commit = (self.system or {}).get("git_commit", "unknown")
        host = (self.system or {}).get("host") or socket.gethostname()
        msg = (f"results: {self.config.get('label')} run on {host} ({self.program} {commit}), "
               f"{len(self.cases)} cases: {summary or 'none'}\n\n"
               f"Run folder {os.path.relpath(self.run_dir, top.stdout.strip())}, written by "
               "scripts/run_all_experiments.sh.")
        # The log says so before the commit, so that the committed log is the final one.
        self.log.say(f"[myconv] committing the run folder: {msg.splitlines()[0]}")
        self.log.file.close()
        for args in (("add", "-f", "--", "."), ("commit", "-q", "-m", msg, "--", ".")):
            p = git(*args)
            if p.returncode != 0:
                last = (p.stdout.strip().splitlines() or [""])[-1]
                self.log._console(f"[myconv] commit failed: git {args[0]}: {last}\n")
                return 1
        head = git("rev-parse", "--short", "HEAD").stdout.strip()
        self.log._console(f"[myconv] committed as {head}\n")
        return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="run_cases.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--run-dir", required=True)
    p.add_argument("--myconv", help="the suite's program (myconv, myops)")
    p.add_argument("--suite", choices=sorted(PROGRAMS),
                   help="a new run's suite (default conv); a resumed run keeps its own")
    p.add_argument("--grid-arg", action="append", help="program option of the grid (listing)")
    p.add_argument("--extra-arg", action="append", help="program option for every invocation")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--timeout", type=float)
    p.add_argument("--label")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--fresh", action="store_true", help="RUN was just made; remove it on bad input")
    p.add_argument("--commit", action="store_true")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--merge-only", action="store_true")
    p.add_argument("--prepare-only", action="store_true",
                   help="list the cases (run.json, cases.jsonl) and stop")
    p.add_argument("--prepared", action="store_true",
                   help="run the cases of a folder made with --prepare-only")
    args = p.parse_args(argv)
    if sys.stdout is not None:
        sys.stdout.reconfigure(line_buffering=True)
    if not args.merge_only and not args.myconv:
        print(f"{PROG}: error: no program given (--myconv)", file=sys.stderr)
        return 2
    runner = Runner(args)
    try:
        return runner.run()
    except Stopped:
        name = signal.Signals(runner.stop_signal).name
        print(f"[myconv] stopped by {name} before the first case", flush=True)
        return 128 + runner.stop_signal
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
