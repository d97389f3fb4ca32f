"""What every part of the runner shares: the suites' programs, the --quick timing, the errors
main() turns into exit codes, small helpers (time stamps, atomic writes, result files) and the
log (console and RUN/all_experiments.txt)."""

import datetime
import json
import os
import sys
import threading

PROG = "run_all_experiments.sh"

# --quick: a smoke run, a few samples per case.
QUICK_ARGS = [("--warmup", "1"), ("--min-iters", "3"), ("--min-time-ms", "0"),
              ("--max-time-ms", "20")]
DEFAULT_TIMEOUT_S = 900
# The program of each suite, and how a descriptor carries a name (conv: n"x", ops: :n"x"; the
# transformer suite's name is the model: mb1in128out64:n"gpt2").
PROGRAMS = {"conv": "myconv", "ops": "myops", "mlp": "mymlp", "transformer": "mytransformer"}
NAME_SUFFIX = {"conv": 'n"{}"', "ops": ':n"{}"', "mlp": ':n"{}"',
               "transformer": ':n"{}"'}


class UsageError(Exception):
    pass


class Stopped(Exception):
    """A signal arrived while the case list was being made."""


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


def read_json_results(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("results"), list) else None


class Log:
    """Console and RUN/all_experiments.txt, whole lines, flushed at once. The runner's own lines
    start with tag, the suite's program in brackets ([myops])."""

    def __init__(self, path, verbose, tag="[myconv]"):
        self.file = open(path, "a", encoding="utf-8", buffering=1)
        self.tag = tag  # the program's name, the prefix of the runner's own lines: [mymlp]
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
