"""One session of the runner on a run folder: its state, the top level (lock, signals, new run,
--resume, --prepared, --merge-only), the per-case progress line, the report at the end
(scripts/analyze_results.py) and --commit. The work is done by the mixins: cases.py (case list,
run settings, resume checks), limits.py (the op suite's limits), isolation.py (the program's
processes, per-case limit, crash and OOM records), output.py (run.json, cases.jsonl,
results.json, results.csv), workers.py (--gpus: parallel workers, merged by merge.py),
reference.py (the transformer suite's Hugging Face reference, after the cases), inductor.py
(the conv suite's PyTorch Inductor reference, after the cases)."""

import collections
import fcntl
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

from results.results_schema import SCHEMA_VERSION

from runner.cases import CasesMixin, case_key
from runner.common import PROGRAMS, Log, Stopped, UsageError, hms, read_json_results, shown
from runner.inductor import InductorMixin
from runner.isolation import IsolationMixin
from runner.limits import LimitsMixin
from runner.output import OutputMixin
from runner.queue import QueueMixin, group_cases
from runner.reference import ReferenceMixin
from runner.shard import case_costs, load_times, split
from runner.workers import WorkersMixin

# The scripts' parent folder (the source tree, or PREFIX/share/myconv in an install).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_report(run_dir, log, references=()):
    """RUN/report.md and RUN/plots/ (scripts/analyze_results.py) from RUN/results.json, the
    reference's result files (the HF reference of the transformer suite) and the external
    references the run measured beside it (RUN/references/*.json: the Python PyTorch figures of
    the MLP suite); a failure is logged, the results stay."""
    script = os.path.join(ROOT, "scripts", "analyze_results.py")
    if not os.path.exists(script):
        log.say(f"{log.tag} report skipped: scripts/analyze_results.py is not there")
        return
    refs = os.path.join(run_dir, "references")
    extra = sorted(os.path.join(refs, n) for n in os.listdir(refs)
                   if n.endswith(".json")) if os.path.isdir(refs) else []
    cmd = [sys.executable, script, os.path.join(run_dir, "results.json"), *references, *extra,
           "--output-dir", run_dir]
    log.detail(f"$ {shlex.join(cmd)}")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors="replace", stdin=subprocess.DEVNULL)
    for line in p.stdout.splitlines():
        log.detail(line)
    rel = shown(run_dir)
    if p.returncode != 0:
        last = (p.stdout.strip().splitlines() or [""])[-1]
        log.say(f"{log.tag} report failed (exit {p.returncode}: {last}); the results are kept")
    else:
        log.say(f"{log.tag} report: {rel}/report.md, {rel}/plots/")


class Runner(CasesMixin, LimitsMixin, IsolationMixin, OutputMixin, WorkersMixin,
             QueueMixin, ReferenceMixin, InductorMixin):
    def __init__(self, args):
        self.args = args
        self.run_dir = os.path.abspath(args.run_dir)
        self.cases_dir = os.path.join(self.run_dir, "cases")
        self.stop_signal = None
        self.child = None
        self.records = {}   # case key -> result record
        self.record_file = {}  # case key -> the case file it was read from
        self.slot_clock = None  # when the runner last saw a case finish (isolation.py)
        self.csv_rows = {}  # case key -> CSV row (column -> text) written by myconv
        self.csv_header = None
        self.system = None
        self.models = {}  # name -> system.models entry, over every case file (cases.py)
        self.schema_version = SCHEMA_VERSION
        self.next_index = 1
        self.session_start = time.monotonic()
        self.session_done = 0
        self.done_before = 0
        self.suite = args.suite or "conv"  # a resumed run's own suite comes from run.json
        self.program = PROGRAMS[self.suite]
        self.limits = None  # the op suite's measured limits (system fields), once per run

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
        self.log = Log(os.path.join(self.run_dir, "all_experiments.txt"), a.verbose,
                       tag=f"[{self.program}]")
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
            if a.plan:  # the cases are listed and counted; nothing runs
                self.say_plan()
                self.lock_file.close()
                shutil.rmtree(self.run_dir, ignore_errors=True)
                return 0
            if a.prepare_only:  # the cases are listed; a later --prepared runs them
                os.unlink(os.path.join(self.run_dir, ".runner.lock"))
                return 0
        if a.timeout is not None:
            self.config["timeout_s"] = a.timeout
        self.timeout = float(self.config.get("timeout_s") or 0)
        workers = self.config.get("workers")
        if workers:  # --gpus: the workers' folders hold what is recorded
            for w in workers:
                doc = read_json_results(os.path.join(self.worker_dir(w), "results.json"))
                for rec in (doc or {}).get("results", []):
                    self.records.setdefault(case_key(rec), rec)
        else:
            self.measure_limits(measure=False)
            self.load_case_files()
            self.write_results()
        self.done_before = sum(1 for c in self.cases if case_key(c) in self.records)

        total = len(self.cases)
        done = sum(1 for c in self.cases if case_key(c) in self.records)
        groups = group_cases(self.cases)
        backends = list(dict.fromkeys(c["backend"] for c in self.cases))
        rel = shown(self.run_dir)
        self.log.say(f"{self.log.tag} {'resuming' if a.resume else 'run'} {self.config.get('label')}: "
                     f"{total} cases ({len(groups)} problem(s) x {len(backends)} backend(s): "
                     f"{', '.join(backends)}), {done} recorded, "
                     f"timeout {self.timeout:g} s per case, "
                     f"{self.program} {shlex.join(self.timing_args()) or '(default timing)'}")
        self.log.say(f"{self.log.tag} run folder {rel} (console log in all_experiments.txt)")
        for note in self.config.get("notes", []):
            self.log.say(f"{self.log.tag} note: {note}")
        if self.config.get("shard"):
            sh = self.config["shard"]
            self.log.say(f"{self.log.tag} shard {sh['index']}/{sh['count']}: {total} of "
                         f"{sh['cases_total']} cases, estimated cost share "
                         f"{sh['estimated_cost_share']} (by {sh['cost']})")
        failed = []
        if workers:
            failed = self.run_workers(resume=bool(a.resume))
        else:
            if done < total and not self.limits:
                self.measure_limits()
            self.slot_clock = time.monotonic()
            self.run_queue(groups)
            self.write_results()
        counts = collections.Counter(self.records[case_key(c)]["status"] for c in self.cases
                                     if case_key(c) in self.records)
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        recorded = sum(counts.values())
        if self.stop_signal is not None:
            name = signal.Signals(self.stop_signal).name
            self.log.say(f"{self.log.tag} stopped by {name}: {recorded} of {total} cases recorded "
                         f"({summary or 'none'}) in {rel}/results.json and results.csv")
            self.log.say(f"{self.log.tag} finish with: scripts/run_all_experiments.sh --resume {rel}")
            return 128 + self.stop_signal
        self.log.say(f"{self.log.tag} done in {hms(time.monotonic() - self.session_start)}: "
                     f"{recorded} cases ({summary or 'none'}); "
                     f"{rel}/results.json, results.csv")
        if failed:
            self.log.say(f"{self.log.tag} {recorded} of {total} cases recorded; worker(s) "
                         f"{', '.join(failed)} failed; finish with: "
                         f"scripts/run_all_experiments.sh --resume {rel}")
        if not a.no_report and not failed and self.config.get("hf_reference"):
            self.run_references()
            if self.stop_signal is not None:
                name = signal.Signals(self.stop_signal).name
                self.log.say(f"{self.log.tag} stopped by {name} in the HF reference; finish with: "
                             f"scripts/run_all_experiments.sh --resume {rel}")
                return 128 + self.stop_signal
            if workers:
                self.merge_workers()
            else:
                self.write_results()
        if not a.no_report and not failed and self.config.get("trust_check"):
            self.run_trust_check()
        if not a.no_report and not failed and self.config.get("inductor_reference"):
            self.run_inductor_reference()
            if self.stop_signal is not None:
                name = signal.Signals(self.stop_signal).name
                self.log.say(f"[myconv] stopped by {name} in the Inductor reference; finish "
                             f"with: scripts/run_all_experiments.sh --resume {rel}")
                return 128 + self.stop_signal
            if workers:
                self.merge_workers()
            else:
                self.write_results()
        if not a.no_report:
            self.report()
        try:  # the lock stays held (on the open file) until exit; the folder is left clean
            os.unlink(os.path.join(self.run_dir, ".runner.lock"))
        except OSError:
            pass
        if failed:
            return 1
        return self.commit(summary) if a.commit else 0

    def say_plan(self):
        """--plan: the case count, and with --shard every shard's share of the estimated cost."""
        sh = self.config.get("shard")
        if not sh:
            cost = sum(case_costs(self.cases))
            print(f"{self.log.tag} plan: {len(self.cases)} cases, estimated {hms(cost)} (by flop)")
            return
        full = self.full_cases
        times = load_times(self.args.cost_from) if self.args.cost_from else None
        members, load = split(full, sh["count"], case_costs(full, times))
        print(f"{self.log.tag} plan: {len(full)} cases in {sh['count']} shards (by {sh['cost']})")
        for k, (m, c) in enumerate(zip(members, load), 1):
            mark = "  <- this one" if k == sh["index"] else ""
            print(f"{self.log.tag} shard {k}/{sh['count']}: {len(m)} cases, estimated {hms(c)}{mark}")

    # ---- the progress line, the report, --commit -----------------------------------------

    def progress(self, rec, tag=None):
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
        where = f" [{tag}]" if tag else ""
        case = rec.get("problem")
        if self.suite == "transformer" and rec.get("name"):  # the model is part of the case
            case = f"{case} {rec['name']}"
        self.log.say(f"[{done}/{total}] elapsed {hms(elapsed)} eta {hms(eta)} "
                     f"{case} {rec.get('backend')}: {what}{where}")

    def report(self):
        make_report(self.run_dir, self.log, self.reference_files() + self.inductor_files())

    def commit(self, summary):
        def git(*args):
            return subprocess.run(["git", "-C", self.run_dir] + list(args),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        top = git("rev-parse", "--show-toplevel")
        if top.returncode != 0:
            self.log.say(f"{self.log.tag} commit failed: {self.run_dir} is not in a git repository")
            return 1
        commit = (self.system or {}).get("git_commit", "unknown")
        host = (self.system or {}).get("host") or socket.gethostname()
        msg = (f"results: {self.config.get('label')} run on {host} ({self.program} {commit}), "
               f"{len(self.cases)} cases: {summary or 'none'}\n\n"
               f"Run folder {os.path.relpath(self.run_dir, top.stdout.strip())}, written by "
               "scripts/run_all_experiments.sh.")
        # The log says so before the commit, so that the committed log is the final one.
        self.log.say(f"{self.log.tag} committing the run folder: {msg.splitlines()[0]}")
        self.log.file.close()
        for args in (("add", "-f", "--", "."), ("commit", "-q", "-m", msg, "--", ".")):
            p = git(*args)
            if p.returncode != 0:
                last = (p.stdout.strip().splitlines() or [""])[-1]
                self.log._console(f"{self.log.tag} commit failed: git {args[0]}: {last}\n")
                return 1
        head = git("rev-parse", "--short", "HEAD").stdout.strip()
        self.log._console(f"{self.log.tag} committed as {head}\n")
        return 0
