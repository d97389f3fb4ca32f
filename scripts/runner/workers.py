"""--gpus: one run folder whose cases run in parallel workers, one per GPU and one for the CPU
backends. Each worker is an ordinary runner (run_cases.py --prepared, later --resume) on a run
folder of its own, RUN/workers/<name>/: so the per-case isolation, limit, crash records and
--resume are the runner's own. The GPU workers list every GPU case, largest estimated cost first
(shard.py: by FLOPs, or an earlier run's times with --cost-from), and take them from one shared
queue (queue.py), so that none idles while another has a backlog; the CPU worker runs the CPU
cases. A GPU worker sees only its GPU
(CUDA_VISIBLE_DEVICES=<UUID>) and records it in each of its GPU results (`gpu`); the CPU worker
sees none and is pinned to cores no GPU worker uses (gpus.core_split). This process, the
coordinator, starts the workers, prints one progress line per case for the whole run (from the
workers' results.json, rewritten after each case), forwards a stop signal to them, and merges
their folders into RUN/results.json, results.csv and the report (merge.py).
A mixin of session.Runner, on its state: args, config, cases, records, run_dir, log,
stop_signal."""

import json
import os
import subprocess
import sys
import time

from runner import gpus as gpu_info
from runner.cases import case_key
from runner.common import UsageError, read_json_results, shown, write_atomic
from runner.merge import Part, write_merged
from runner.queue import QUEUE_FILE
from runner.shard import case_costs, load_times

POLL_S = 0.5
RUN_CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_cases.py")


def cores_text(cores):
    """0-3,8 for [0, 1, 2, 3, 8]."""
    out, start = [], None
    for i, c in enumerate(cores):
        if start is None:
            start = c
        if i + 1 == len(cores) or cores[i + 1] != c + 1:
            out.append(str(start) if start == c else f"{start}-{c}")
            start = None
    return ",".join(out)


def per_gpu_cores():
    v = os.environ.get("MYCONV_GPU_WORKER_CORES")
    if v is None:
        return None
    if not v.isdigit() or int(v) < 1:
        raise UsageError(f"MYCONV_GPU_WORKER_CORES: expected a count of cores, got '{v}'")
    return int(v)


class WorkersMixin:
    def plan_workers(self):
        """The workers of a new --gpus run: RUN/workers/<name>/ (run.json, cases.jsonl) and
        run.json's `workers`."""
        chosen = gpu_info.select(self.args.gpus)
        times = load_times(self.args.cost_from) if self.args.cost_from else None
        costs = case_costs(self.cases, times)
        cuda = [i for i, c in enumerate(self.cases) if c.get("device") == "cuda"]
        cpu = [i for i, c in enumerate(self.cases) if c.get("device") != "cuda"]
        # The shared queue's order: problems by their GPU cases' estimated cost, largest first
        # (the longest ones start early; the short ones fill the end), stable.
        group_cost = {}
        for i in cuda:
            k = (self.cases[i]["problem"], self.cases[i].get("name", ""))
            group_cost[k] = group_cost.get(k, 0.0) + costs[i]
        order = sorted(cuda, key=lambda i: -group_cost[(self.cases[i]["problem"],
                                                         self.cases[i].get("name", ""))])
        gpu_cores, cpu_cores = gpu_info.core_split(os.sched_getaffinity(0), len(chosen),
                                                   per_gpu_cores())
        # Fewer problems than GPUs: the last GPUs stay idle.
        used = list(zip(chosen, gpu_cores))[:len(group_cost)]
        workers = []
        for g, cores in used:
            workers.append({"name": f"gpu{g['index']}", "gpu": g, "cores": cores,
                            "cases": order, "queue": os.path.join("..", QUEUE_FILE),
                            "sharing": len(used)})
        if cpu:
            workers.append({"name": "cpu", "gpu": None,
                            "cores": cpu_cores or sorted(os.sched_getaffinity(0)),
                            "after_gpus": not cpu_cores, "cases": cpu})
        for w in workers:
            wdir = os.path.join(self.run_dir, "workers", w["name"])
            os.makedirs(os.path.join(wdir, "cases"), exist_ok=True)
            config = {k: v for k, v in self.config.items() if k not in ("workers", "shard")}
            config.update(gpu=w["gpu"], label=f"{self.config.get('label')} [{w['name']}]",
                          worker={"name": w["name"], "cores": w["cores"]})
            if w.get("queue"):
                config["worker"].update(queue=w["queue"], sharing=w["sharing"])
            write_atomic(os.path.join(wdir, "cases.jsonl"),
                         "".join(json.dumps(self.cases[i]) + "\n" for i in w["cases"]))
            write_atomic(os.path.join(wdir, "run.json"), json.dumps(config, indent=2) + "\n")
            w["cases"] = len(w["cases"])
        self.config["gpus"] = self.args.gpus
        self.config["gpu"] = None
        self.config["workers"] = workers
        self.write_config()

    def describe_workers(self):
        for w in self.config["workers"]:
            g = w["gpu"]
            what = f"{g['name']} {g['uuid']}" if g else "the CPU backends"
            when = ", after the GPU workers (no core left for it)" if w.get("after_gpus") else ""
            many = (f"{w['cases']} cases" if not w.get("queue") else
                    f"{w['cases']} cases in the queue it shares with {w['sharing'] - 1} other(s)"
                    if w["sharing"] > 1 else f"{w['cases']} cases")
            self.log.say(f"{self.log.tag} worker {w['name']}: {what}, {many}, cores "
                         f"{cores_text(w['cores'])}{when}; {shown(self.worker_dir(w))}")

    def worker_dir(self, w):
        return os.path.join(self.run_dir, "workers", w["name"])

    def check_worker_gpus(self):
        """--resume of a --gpus run: each GPU worker's GPU must be on this host."""
        found, why = gpu_info.host_gpus()
        uuids = {g["uuid"] for g in gpu_info.visible(found or [])}
        for w in self.config["workers"]:
            if w["gpu"] and w["gpu"]["uuid"] not in uuids:
                raise UsageError(f"--resume: worker {w['name']}'s GPU {w['gpu']['uuid']} is not "
                                 f"on this host ({why or 'not listed by nvidia-smi'})")

    def start_worker(self, w, resume):
        wdir = self.worker_dir(w)
        cmd = [sys.executable, RUN_CASES, "--run-dir", wdir, "--myconv", self.args.myconv,
               "--resume" if resume else "--prepared", "--no-report"]
        if self.args.timeout is not None:
            cmd += ["--timeout", f"{self.args.timeout:g}"]
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=w["gpu"]["uuid"] if w["gpu"] else "")
        cores = set(w["cores"]) & os.sched_getaffinity(0) or os.sched_getaffinity(0)
        self.log.detail(f"$ CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']} taskset -c "
                        f"{cores_text(sorted(cores))} {' '.join(cmd)}")
        err = open(os.path.join(wdir, "worker_stderr.txt"), "w")
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=lambda: os.sched_setaffinity(0, cores))

    def collect(self, tag_of):
        """Progress lines for the cases the workers recorded since the last call."""
        new = 0
        for w in self.config["workers"]:
            doc = read_json_results(os.path.join(self.worker_dir(w), "results.json"))
            for rec in (doc or {}).get("results", []):
                k = case_key(rec)
                if k not in self.records:
                    self.records[k] = rec
                    self.progress(rec, tag_of(w))
                    new += 1
        return new

    def run_workers(self, resume):
        """Runs the workers to the end (or a stop signal), merges; the exit status."""
        workers = self.config["workers"]
        if resume:
            self.check_worker_gpus()
        self.describe_workers()
        parts = {w["name"]: Part(self.worker_dir(w), w["name"]) for w in workers}
        # A worker of the shared queue is done when every case of the queue is recorded, by
        # whichever worker ran it.
        shared = set()
        for w in workers:
            if w.get("queue"):
                shared |= set(parts[w["name"]].records)

        def done(w):
            p = parts[w["name"]]
            return (all(case_key(c) in shared for c in p.cases) if w.get("queue")
                    else p.complete)
        todo = [w for w in workers if not done(w)]
        procs, failed, forwarded = {}, [], None
        for w in todo:
            if not w.get("after_gpus"):
                procs[w["name"]] = self.start_worker(w, resume=resume or parts[w["name"]].recorded)
        last_merge = 0.0
        while True:
            if self.stop_signal is not None and forwarded is None:
                forwarded = self.stop_signal
                for p in procs.values():
                    if p.poll() is None:
                        os.killpg(p.pid, forwarded)
            new = self.collect(lambda w: w["name"])
            if new and time.monotonic() - last_merge > 5:
                self.merge_workers()
                last_merge = time.monotonic()
            running = [n for n, p in procs.items() if p.poll() is None]
            pending = [w for w in todo if w["name"] not in procs]
            if not running and pending and forwarded is None:
                for w in pending:  # the CPU worker that waited for a free machine
                    procs[w["name"]] = self.start_worker(w, resume=parts[w["name"]].recorded > 0)
                continue
            if not running:
                break
            time.sleep(POLL_S)
        self.collect(lambda w: w["name"])
        for name, p in procs.items():
            if p.returncode not in (0, None) and not (forwarded and p.returncode >= 128):
                with open(os.path.join(self.run_dir, "workers", name, "worker_stderr.txt")) as f:
                    last = (f.read().strip().splitlines() or [""])[-1]
                self.log.say(f"{self.log.tag} worker {name} exited with {p.returncode}: {last}")
                failed.append(name)
        self.merge_workers()
        if forwarded is not None:
            self.stop_signal = forwarded
        return failed

    def merge_workers(self):
        parts = [Part(self.worker_dir(w), w["name"]) for w in self.config["workers"]]
        run = {"runner": "scripts/run_all_experiments.sh", "suite": self.suite,
               "label": self.config.get("label"),
               f"{self.program}_args": self.config["grid_args"] + self.timing_args(),
               "timeout_s": self.config.get("timeout_s"), "gpus": self.config.get("gpus"),
               "wall_s": round(time.monotonic() - self.session_start, 3),
               "workers": [{"name": w["name"], "gpu": w["gpu"], "cores": w["cores"],
                            "dir": os.path.join("workers", w["name"]), "cases": w["cases"],
                            "queue": "shared" if w.get("queue") else "own",
                            "recorded": p.recorded} for w, p in zip(self.config["workers"],
                                                                     parts)]}
        if self.config.get("shard"):
            run["shard"] = self.config["shard"]
        if self.reference_status():
            run["hf_reference"] = self.reference_status()
        if self.inductor_status():
            run["inductor_reference"] = self.inductor_status()
        write_merged(self.run_dir, self.cases, parts, run)
