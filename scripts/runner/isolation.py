"""Running the suite's program as a child process: quietly for the set-up (listing, limits), and
per problem with the watchdog of the per-case limit (runner/__init__.py, design), which turns the
first case an invocation did not record into a synthesized record (timeout, crash, out of memory).
A mixin of session.Runner, on its state: args, suite, program, cases, records, timeout,
stop_signal, child, next_index, cases_dir, log."""

import collections
import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from runner.cases import case_key
from runner.common import NAME_SUFFIX, Stopped, write_atomic

# The phrase of the programs' memory refusal (core/memory_fit.cpp MemoryGate).
MEMORY_REFUSAL = "does not fit in memory"
KILL_GRACE_S = 5  # SIGTERM first; SIGKILL this long after (timeout --kill-after)
POLL_S = 0.1
# Most problems one invocation runs (without --isolate): the process start, library load and
# device context are paid once for them, and a long sweep still gets a fresh process now and then.
BATCH_PROBLEMS = 64


def child_wrapper():
    """Line-buffered output (the log follows the run), and myconv dies with the runner even when
    the runner is killed with SIGKILL (setpriv's parent-death signal survives exec)."""
    wrap = ["stdbuf", "-oL", "-eL"] if shutil.which("stdbuf") else []
    if shutil.which("setpriv"):
        wrap = ["setpriv", "--pdeathsig", "KILL", "--"] + wrap
    return wrap


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


def classify(rc, timed_out, tail, oom_before, timeout, program):
    """(status, reason) of the case an invocation left unrecorded: exit status rc (None when it
    ran past the limit), its last output lines, the OOM-kill counter before it."""
    if timed_out:
        return "timeout", (f"no result within {timeout:g} s (the per-case limit, "
                           f"--timeout); {program} was killed")
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
    # The program's memory check refused the invocation before running it (exit 2, core/
    # memory_fit.hpp): none of its cases fits here, which is what `unsupported` records.
    fit = next((line for line in reversed(tail) if MEMORY_REFUSAL in line), None)
    if rc == 2 and fit:  # "PROG: error: 'CASE' does not fit in memory: WHY; no case ... fits"
        why = fit[fit.index(MEMORY_REFUSAL):].split("; no case of this invocation fits")[0]
        return "unsupported", why.strip()
    if any(s in text for s in ("bad_alloc", "out of memory")):
        return "failed", f"out of memory: {last.strip()}"
    if rc:
        return "failed", f"{program} exited with code {rc}: {last.strip()}"
    return "failed", f"{program} exited without a result for this case"


class IsolationMixin:
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

    def start_child(self, cmd, tail_lines):
        """Starts cmd in its own session (the child wrapper around it) as self.child, its output
        (stdout and stderr) pumped into the log by a thread; (process, thread, the output's last
        tail_lines lines)."""
        proc = subprocess.Popen(child_wrapper() + cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        self.child = proc
        tail = collections.deque(maxlen=tail_lines)

        def pump():
            for raw in proc.stdout:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                tail.append(line)
                self.log.detail(line)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        return proc, reader, tail

    def watch_reference(self, cmd, limit):
        """Runs a reference script (the HF or Inductor reference) as self.child, its output in the
        log, until it ends, its limit (seconds; None: none) passes or the run is stopped: None
        when stopped (killed; it runs again on --resume), else (timed out, exit status, the
        output's last lines, seconds)."""
        start = time.monotonic()
        proc, reader, tail = self.start_child(cmd, 8)
        timed_out = False
        while proc.poll() is None:
            if self.stop_signal is not None:
                self.kill_child(proc)
                reader.join(2)
                self.child = None
                return None
            if limit and time.monotonic() - start > limit:
                timed_out = True
                self.kill_child(proc)
                break
            time.sleep(POLL_S)
        reader.join(5)
        self.child = None
        return timed_out, proc.returncode, list(tail), round(time.monotonic() - start, 1)

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

    def batch_limit(self):
        if getattr(self, "split_next", 0) > 0:  # after a refused command line (invoke)
            self.split_next -= 1
            return 1
        return 1 if self.config.get("isolate") else BATCH_PROBLEMS

    def take_batch(self, queue):
        """The next invocation's problems from the front of queue (a deque of (the problem's
        first case, its backends to run)): one with --isolate, else up to BATCH_PROBLEMS that
        share their backend list (one --backend list per invocation)."""
        batch = [queue.popleft()]
        limit = self.batch_limit()
        while queue and len(batch) < limit and self.batchable(batch[0], queue[0]):
            batch.append(queue.popleft())
        return self.in_case_order(batch)

    def batchable(self, first, entry):
        """Whether entry may join first's invocation: one --backend list per invocation, and in
        the transformer suite one model (its program loads each model it runs, and runs the
        cases model by model)."""
        if entry[1] != first[1]:
            return False
        return self.suite != "transformer" or entry[0].get("name") == first[0].get("name")

    def in_case_order(self, batch):
        """batch in case-list order: the order the program runs its problems in, which the
        culprit of a crash is found by."""
        if not hasattr(self, "case_index"):
            self.case_index = {}
            for i, c in enumerate(self.cases):
                self.case_index.setdefault((c["problem"], c.get("name", "")), i)
        return sorted(batch, key=lambda e: self.case_index.get(
            (e[0]["problem"], e[0].get("name", "")), 0))

    def note_slots(self, recs, lost=False):
        """The runner's view of the slots of recs, the cases it saw finish in one poll: the time
        since it last saw a case finish (or since its first invocation) is theirs. Each gets
        slot_ms.wall = the program's total, the first also the rest of that time as
        slot_ms.runner (process creation before the program's clock starts, polling, writing the
        run's files), so that the walls add up to the runner's time. A synthesized record's wall
        is all `lost` (a crash, or a hang until the limit)."""
        now = time.monotonic()
        seen = (now - (self.slot_clock or now)) * 1000.0
        self.slot_clock = now
        if lost:
            for rec in recs:
                rec["slot_ms"] = {"total": None, "wall": seen, "runner": 0.0, "lost": seen}
                seen = 0.0
            return
        slots = [rec.get("slot_ms") if isinstance(rec.get("slot_ms"), dict) else None
                 for rec in recs]
        program = sum(slot.get("total") or 0.0 for slot in slots if slot)
        rest = max(0.0, seen - program)
        for i, (rec, slot) in enumerate(zip(recs, slots)):
            if slot is None:  # a program that records no slot times
                rec["slot_ms"] = {"total": None, "wall": seen / len(recs)}
                continue
            slot["runner"] = rest if i == 0 else 0.0
            slot["wall"] = (slot.get("total") or 0.0) + slot["runner"]

    def invoke(self, batch):
        """Runs one program invocation over batch (a list of (the problem's first case, the
        backends to run), one backend list for all); returns the (problem, backends) still to
        run after it, in order, or None when stopped."""
        index = self.next_index
        self.next_index += 1
        base = os.path.join(self.cases_dir, f"{index:04d}")
        json_path, csv_path = base + ".json", base + ".csv"
        backends = batch[0][1]
        cmd = [self.args.myconv]
        wanted = set()
        for problem_case, todo in batch:
            desc = problem_case["problem"]
            if problem_case.get("name"):
                desc += NAME_SUFFIX[self.suite].format(problem_case["name"])
            cmd += ["--problem", desc]
            wanted |= {(problem_case["problem"], problem_case.get("name", ""), b) for b in todo}
        cmd += ["--backend", ",".join(backends), "--json", json_path, "--csv", csv_path,
                "--no-source-diff"] + self.timing_args()
        if self.limits:
            cmd.append("--no-peaks")
        self.log.detail(f"$ {shlex.join(cmd)}")
        oom_before = oom_kill_count()
        proc, reader, tail = self.start_child(cmd, 12)
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
                self.note_slots(new)
                self.take_csv(csv_path, wanted)
                last_progress = time.monotonic()
            self.write_results()
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
        if self.stop_signal is not None:
            # Stopped while the program ended: a signal to the whole job (Slurm's SIGTERM at a
            # time limit reaches every process) ends the program too; its unrecorded case is not
            # its fault and runs again on --resume.
            return None
        missing = [(pc, b) for pc, todo in batch for b in todo
                   if (pc["problem"], pc.get("name", ""), b) not in self.records]
        if not missing:
            return []
        status, reason = classify(rc, timed_out, tail, oom_before, self.timeout,
                                  self.program)
        if rc == 2 and status != "unsupported" and len(batch) > 1 and len(missing) == sum(
                len(todo) for _, todo in batch):
            # The program refused the whole command line before any case (exit 2): which
            # problem it refused is not known, so they run again one per process.
            self.split_next = len(batch)
            return [(pc, todo) for pc, todo in batch]
        # A memory refusal is the whole invocation's: every case it held is recorded. Otherwise
        # the program runs its cases in the listed order and records each at once, so the first
        # unrecorded case is the culprit and the rest run again, in a new process.
        culprits = missing if status == "unsupported" else missing[:1]
        recs = []
        for pc, culprit in culprits:
            template = next(c for c in self.cases if case_key(c) == (
                pc["problem"], pc.get("name", ""), culprit))
            rec = dict(template)
            rec["status"] = status
            rec["reason"] = reason
            rec["extra"] = dict(rec.get("extra") or {})
            rec["extra"]["runner"] = {
                f"{self.program}_exit": rc,
                "output_tail": [line for line in tail if line.strip()][-8:],
                "invocation": shlex.join(cmd)}
            recs.append(rec)
        self.note_slots(recs, lost=True)
        synth = base + "-runner.json"
        write_atomic(synth, json.dumps({"schema_version": self.schema_version, "system": {},
                                        "results": recs}, indent=2) + "\n")
        self.take_json(synth)
        self.write_results()
        for rec in recs:
            self.progress(rec)
        rest = collections.OrderedDict()
        for pc, b in missing[len(culprits):]:
            rest.setdefault((pc["problem"], pc.get("name", "")), (pc, []))[1].append(b)
        return list(rest.values())
