"""The conv suite's compiler reference, run after the cases with --inductor-reference: PyTorch
Inductor (scripts/references/inductor_reference.py, one Python process over the run's GPU conv
problems, the same seed and sampling options) into RUN/inductor_reference/torch_inductor.json, as
the HF reference of the transformer suite is run (reference.py). What it did, or why not, is kept in
RUN/inductor_reference/status.json (--resume runs it again unless it is `done`), said in the log,
in results.json's `run.inductor_reference`; the report reads the records beside results.json.
Where its Python ($MYCONV_PYTHON, else python3) has no torch with torch.compile or no GPU, the
script records every problem `skipped` with the reason. A mixin of session.Runner, on its state:
args, config, cases, run_dir, log, timeout, stop_signal, child."""

import json
import os
import shlex

from runner.common import utc_now, write_atomic
from runner.reference import hf_python, option_values

INDUCTOR_DIR = "inductor_reference"
RESULTS_FILE = "torch_inductor.json"
STATUS_FILE = "status.json"
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "references",
                      "inductor_reference.py")
# myconv's options that inductor_reference.py takes alike: the seed and the sampling rules.
SHARED_OPTIONS = ("--seed", "--warmup", "--min-iters", "--max-iters", "--min-time-ms",
                  "--max-time-ms", "--target-cv")
MODES = 2  # default and max-autotune: a record per mode and problem


def gpu_problems(cases):
    """The distinct (problem, name) of the run's GPU conv cases."""
    return {(c.get("problem"), c.get("name", "")) for c in cases
            if c.get("device") == "cuda" and c.get("suite", "conv") == "conv"}


class InductorMixin:
    def inductor_status(self):
        try:
            with open(os.path.join(self.run_dir, INDUCTOR_DIR, STATUS_FILE),
                      encoding="utf-8") as f:
                doc = json.load(f)
            return doc if isinstance(doc, dict) else None
        except (OSError, ValueError):
            return None

    def inductor_files(self):
        """The reference's result file, where it exists (for the report)."""
        path = os.path.join(self.run_dir, INDUCTOR_DIR, RESULTS_FILE)
        return [path] if os.path.isfile(path) else []

    def write_inductor_status(self, status):
        os.makedirs(os.path.join(self.run_dir, INDUCTOR_DIR), exist_ok=True)
        write_atomic(os.path.join(self.run_dir, INDUCTOR_DIR, STATUS_FILE),
                     json.dumps(status, indent=2) + "\n")

    def inductor_command(self, python):
        out = os.path.join(self.run_dir, INDUCTOR_DIR, RESULTS_FILE)
        cmd = [python, SCRIPT, "--cases", os.path.join(self.run_dir, "cases.jsonl"),
               "--device", "cuda", "--output", out]
        given = option_values(self.config["extra_args"] + self.timing_args())
        for opt in SHARED_OPTIONS:
            if opt in given:
                cmd += [opt, given[opt]]
        return cmd + ["--myconv", os.path.abspath(self.args.myconv)]

    def run_inductor_reference(self):
        """--inductor-reference: one inductor_reference.py process (its output into the log)."""
        if not self.config.get("inductor_reference"):
            return
        status = self.inductor_status() or {}
        if status.get("status") == "done":
            self.log.say(f"[myconv] Inductor reference: done before ({INDUCTOR_DIR}/"
                         f"{RESULTS_FILE})")
            return
        python = hf_python()
        problems = len(gpu_problems(self.cases))
        status = {"python": python, "utc_time": utc_now(), "problems": problems}
        shard = self.config.get("shard")
        why = None
        if shard and shard.get("index") != 1:
            why = (f"shard {shard['index']}/{shard['count']}: a shard holds part of the grid; "
                   "run scripts/references/inductor_reference.py on the merged run's cases.jsonl")
        elif problems == 0:
            why = "the run holds no GPU conv case"
        if why:
            status.update(status="skipped", reason=why)
            self.write_inductor_status(status)
            self.log.say(f"[myconv] Inductor reference skipped: {why}")
            return
        os.makedirs(os.path.join(self.run_dir, INDUCTOR_DIR), exist_ok=True)
        cmd = self.inductor_command(python)
        status["command"] = shlex.join(cmd)
        # The per-case limit for each of its records (a problem in each mode).
        limit = self.timeout * problems * MODES if self.timeout else None
        self.log.say(f"[myconv] Inductor reference: {problems} GPU problem(s) x {MODES} modes "
                     f"into {INDUCTOR_DIR}/{RESULTS_FILE}")
        self.log.detail(f"$ {status['command']}")
        watched = self.watch_reference(cmd, limit)
        if watched is None:  # stopped: runs again on --resume
            return
        timed_out, code, tail, seconds = watched
        status.update(seconds=seconds, exit=code)
        last = next((line.strip() for line in reversed(tail) if line.strip()), "")
        if timed_out:
            status.update(status="timeout", reason=f"no end within {limit:g} s (the per-case "
                                                   "limit for each problem and mode); killed")
        elif code == 0:
            status.update(status="done", reason="")
            skipped = [line for line in tail if "inductor_reference.py: skipped:" in line]
            if skipped:  # every problem recorded skipped: --resume tries again
                status.update(status="skipped",
                              reason=skipped[-1].split("skipped:", 1)[1].strip())
        else:
            status.update(status="failed", reason=f"exit {code}: {last}")
        self.write_inductor_status(status)
        self.log.say(f"[myconv] Inductor reference: {status['status']}"
                     + (f": {status['reason']}" if status["reason"] else "")
                     + f" ({status['seconds']:g} s)")
