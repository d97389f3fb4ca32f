"""The transformer suite's external reference, run after the cases: Hugging Face transformers on
the same models, grid, seed, dtype and device (scripts/references/hf_reference.py, one process per
model and dtype, into RUN/hf_reference/<model>_<dtype>.json), where the Python that would run it
($MYCONV_PYTHON, else python3) imports transformers and torch. What it did, or why not, is kept in
RUN/hf_reference/status.json (--resume runs again only what did not finish), said in the log, in
results.json's `run.hf_reference` and in the report, which reads the files beside results.json.
A mixin of session.Runner, on its state: args, config, cases, run_dir, log, timeout,
stop_signal, child."""

import collections
import json
import os
import re
import shlex
import subprocess

from runner.common import utc_now, write_atomic

HF_DIR = "hf_reference"
STATUS_FILE = "status.json"
SCRIPTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCES = os.path.join(SCRIPTS, "references")
SCRIPT = os.path.join(REFERENCES, "hf_reference.py")
# mytransformer's options that hf_reference.py takes alike (the same grid, seed and warm-up): the
# documented spelling -> hf_reference.py's.
SHARED_OPTIONS = {"--preset": "--preset", "--config-file": "--config-file",
                  "--num-runs": "--num_runs", "--temperature": "--temperature",
                  "--top-p": "--top_p", "--max-batch-input-product": "--max_batch_input_product",
                  "--seed": "--seed", "--warmup": "--warmup"}
METHODS = 2  # hf_reference.py's default --method both: a record per method and case


def option_values(args):
    """{option: last value} of a program's argument list ("--k v" and "--k=v"), each option by its
    documented spelling ('_' read as '-', a plural as the singular: core/grammar.hpp)."""
    plural = {"--models": "--model", "--backends": "--backend", "--dtypes": "--dtype"}

    def name(k):
        k = k.replace("_", "-")
        return plural.get(k, k)

    out, i = {}, 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and "=" in a:
            k, v = a.split("=", 1)
            out[name(k)] = v
        elif a.startswith("--") and i + 1 < len(args) and not args[i + 1].startswith("--"):
            out[name(a)] = args[i + 1]
            i += 1
        i += 1
    return out


def model_name(spec):
    """The name mytransformer gives the model of a --model spec (models/transformer/settings.cpp
    resolve_model): a folder's name, a file's stem, else the spec (a built-in name)."""
    if os.path.isdir(spec):
        return os.path.basename(spec) or spec
    if os.path.isfile(spec):
        return os.path.splitext(os.path.basename(spec))[0]
    return spec


def file_stem(text):
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)


TRUST_SCRIPT = os.path.join(REFERENCES, "trust_check.py")
TRUST_TIMEOUT_S = 1800


def hf_python():
    return os.environ.get("MYCONV_PYTHON") or "python3"


def hf_missing(python):
    """None when `python` imports transformers and torch, else why not (one line)."""
    try:
        p = subprocess.run([python, "-c", "import transformers, torch"], capture_output=True,
                           text=True, timeout=600, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{python}: {e}"
    if p.returncode == 0:
        return None
    last = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
    return f"{python} cannot import transformers and torch ({last.strip()})"


class ReferenceMixin:
    def run_trust_check(self):
        """--trust-check: scripts/references/trust_check.py on RUN/results.json with the Python that
        has torch ($MYCONV_PYTHON, else python3), into RUN/trust.json and trust.md (the report reads
        them). Its skip (no torch with CUDA there) or failure is logged; the results stay."""
        cmd = [hf_python(), TRUST_SCRIPT, os.path.join(self.run_dir, "results.json"),
               "--output-dir", self.run_dir]
        self.log.detail(f"$ {shlex.join(cmd)}")
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace", stdin=subprocess.DEVNULL,
                               timeout=TRUST_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            self.log.say(f"{self.log.tag} trust check failed: {e}")
            return
        for line in p.stdout.splitlines():
            self.log.detail(line)
        last = (p.stdout.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        if p.returncode == 0:
            self.log.say(f"{self.log.tag} trust check: {last}")
        elif p.returncode == 77:
            self.log.say(f"{self.log.tag} trust check skipped: {last}")
        else:
            self.log.say(f"{self.log.tag} trust check failed (exit {p.returncode}: {last})")

    def reference_status(self):
        try:
            with open(os.path.join(self.run_dir, HF_DIR, STATUS_FILE), encoding="utf-8") as f:
                doc = json.load(f)
            return doc if isinstance(doc, dict) else None
        except (OSError, ValueError):
            return None

    def reference_files(self):
        """The reference's result files that exist, for the report."""
        doc = self.reference_status() or {}
        out = []
        for r in doc.get("runs", []):
            path = os.path.join(self.run_dir, HF_DIR, r.get("file") or "")
            if r.get("file") and os.path.isfile(path):
                out.append(path)
        return out

    def reference_jobs(self):
        """(model name, spec, device, dtype, problems) of every model and dtype the generations
        ran in, in case order; or a reason string why there are none."""
        args = self.config["grid_args"] + self.config["extra_args"]
        specs = [s for s in option_values(args).get("--model", "").split(",") if s]
        by_name = {model_name(s): s for s in specs}
        jobs = collections.OrderedDict()
        for c in self.cases:
            params = c.get("params") or {}
            if params.get("task", "generate") != "generate":
                continue
            key = (c.get("name", ""), c.get("dtype", ""))
            job = jobs.setdefault(key, {"problems": set(), "device": c.get("device")})
            job["problems"].add(c.get("problem"))
        if not jobs:
            return "the run holds no generation (hf_reference.py times generations only)"
        out = []
        for (name, dtype), job in jobs.items():
            out.append((name, by_name.get(name), job["device"], dtype, len(job["problems"])))
        return out

    def run_references(self):
        """The HF reference of a run folder made with it (run.json `hf_reference`)."""
        if not self.config.get("hf_reference"):
            return
        status = self.reference_status() or {}
        done = {(r.get("model"), r.get("dtype")): r for r in status.get("runs", [])
                if r.get("status") == "done"}
        python = hf_python()
        status = {"python": python, "utc_time": utc_now(), "runs": list(done.values())}
        shard = self.config.get("shard")
        jobs = self.reference_jobs()
        why = None
        if shard and shard.get("index") != 1:
            why = (f"shard {shard['index']}/{shard['count']}: shard 1's run folder holds the "
                   "reference of the whole grid")
        elif isinstance(jobs, str):
            why = jobs
        elif all((j[0], j[3]) in done for j in jobs):
            self.log.say(f"{self.log.tag} HF reference: done before ({len(done)} file(s) in "
                         f"{HF_DIR}/)")
            return
        else:
            why = hf_missing(python)
        if why:
            status.update(skipped=True, why=why)
            self.write_reference_status(status)
            self.log.say(f"{self.log.tag} HF reference skipped: {why}")
            return
        os.makedirs(os.path.join(self.run_dir, HF_DIR), exist_ok=True)
        for name, spec, device, dtype, problems in jobs:
            if (name, dtype) in done or self.stop_signal is not None:
                continue
            entry = self.run_reference(python, name, spec, device, dtype, problems)
            if entry is None:  # stopped: runs again on --resume
                break
            status["runs"].append(entry)
            self.write_reference_status(status)

    def run_reference(self, python, name, spec, device, dtype, problems):
        """One hf_reference.py process (its output into the log); its status entry, or None
        when a signal stopped it."""
        stem = file_stem(f"{name}_{dtype}")
        entry = {"model": name, "dtype": dtype, "device": device, "file": stem + ".json"}
        if spec is None:
            entry.update(status="skipped", reason=f"no --model spec of the run is named '{name}'")
            self.log.say(f"{self.log.tag} HF reference {name} {dtype}: skipped: {entry['reason']}")
            return entry
        out = os.path.join(self.run_dir, HF_DIR, entry["file"])
        cmd = [python, SCRIPT, "--model", spec, "--device", device, "--dtype", dtype]
        given = option_values(self.config["extra_args"] + self.timing_args())
        for opt, hf_opt in SHARED_OPTIONS.items():
            if opt in given:
                cmd += [hf_opt, given[opt]]
        cmd += ["--mytransformer", os.path.abspath(self.args.myconv), "--output", out]
        entry["command"] = shlex.join(cmd)
        # The per-case limit for each of its records (a case in each method).
        limit = self.timeout * problems * METHODS if self.timeout else None
        self.log.say(f"{self.log.tag} HF reference {name} {dtype} {device}: {problems} case(s) x "
                     f"{METHODS} methods into {HF_DIR}/{entry['file']}")
        self.log.detail(f"$ {entry['command']}")
        watched = self.watch_reference(cmd, limit)
        if watched is None:  # stopped: runs again on --resume
            return None
        timed_out, code, tail, seconds = watched
        entry["seconds"] = seconds
        entry["exit"] = code
        last = next((line.strip() for line in reversed(tail) if line.strip()), "")
        if timed_out:
            entry.update(status="timeout", reason=f"no end within {limit:g} s (the per-case "
                                                  "limit for each case and method); killed")
        elif code == 0:
            entry.update(status="done", reason="")
        else:
            entry.update(status="failed", reason=f"exit {code}: {last}")
        if not os.path.isfile(out):
            entry["file"] = None
        self.log.say(f"{self.log.tag} HF reference {name} {dtype}: {entry['status']}"
                     + (f": {entry['reason']}" if entry["reason"] else "")
                     + f" ({entry['seconds']:g} s)")
        return entry

    def write_reference_status(self, status):
        os.makedirs(os.path.join(self.run_dir, HF_DIR), exist_ok=True)
        write_atomic(os.path.join(self.run_dir, HF_DIR, STATUS_FILE),
                     json.dumps(status, indent=2) + "\n")

    def reference_summary(self):
        """results.json's `run.hf_reference`: the status file's content, None without one."""
        return self.reference_status()
