#!/usr/bin/env python3
"""The state of a Slurm sweep (scripts/slurm/submit.sh): its jobs' states from Slurm (squeue for
the queued and running ones, sacct for the finished ones, or scontrol where accounting is off),
each shard's progress from its run folder, and the merged run's. scripts/slurm/status.sh prints
it; the task scripts use --run-dirs and --unfinished.

  sweep_state.py SWEEP_DIR               the table (status.sh)
  sweep_state.py SWEEP_DIR --run-dirs    the shards' run folders, one a line
  sweep_state.py SWEEP_DIR --unfinished  the shards not complete, as an sbatch --array list
"""

import glob
import json
import os
import subprocess
import sys


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def shard_run(sweep, i):
    runs = [d for d in sorted(glob.glob(os.path.join(sweep, "shards", str(i), "*", "")))
            if os.path.exists(os.path.join(d, "run.json"))]
    return runs[-1].rstrip("/") if runs else None


def progress(run):
    """(recorded, cases, complete) of a run folder's results.json; None before its first write."""
    doc = load(os.path.join(run, "results.json")) if run else None
    r = (doc or {}).get("run") or {}
    return (r["recorded"], r["cases"], r["complete"]) if "recorded" in r else None


def slurm_states(job_ids):
    """job id (12 or 12_3) -> (state, elapsed, reason or exit code), from squeue, then sacct,
    then scontrol for what neither knows."""
    states = {}
    ids = ",".join(job_ids)
    if not ids:
        return states, []
    notes = []
    q = subprocess.run(["squeue", "-h", "-r", "-j", ids, "-o", "%i|%T|%M|%r"],
                       capture_output=True, text=True)
    for line in q.stdout.splitlines():
        jid, state, elapsed, reason = (line.split("|") + ["", "", ""])[:4]
        states[jid] = (state, elapsed, reason)
    s = subprocess.run(["sacct", "-n", "-P", "-X", "-j", ids, "-o", "JobID,State,Elapsed,ExitCode"],
                       capture_output=True, text=True)
    if s.returncode == 0:
        for line in s.stdout.splitlines():
            jid, state, elapsed, code = (line.split("|") + ["", "", ""])[:4]
            states.setdefault(jid, (state.split()[0] if state else "", elapsed, f"exit {code}"))
    else:
        notes.append("sacct: " + (s.stderr.strip().splitlines() or ["failed"])[-1]
                     + "; finished jobs from scontrol (while slurmctld keeps them)")
        for jid in job_ids:
            c = subprocess.run(["scontrol", "-o", "show", "job", jid], capture_output=True,
                               text=True)
            for line in c.stdout.splitlines():
                f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
                key = f.get("JobId", "")
                if f.get("ArrayTaskId") and f.get("ArrayJobId"):
                    key = f"{f['ArrayJobId']}_{f['ArrayTaskId']}"
                states.setdefault(key, (f.get("JobState", ""), f.get("RunTime", ""),
                                        f"exit {f.get('ExitCode', '')}"))
    return states, notes


def table(sweep, s):
    jobs = s.get("jobs", [])
    states, notes = slurm_states([j["id"] for j in jobs])
    n = s["shards"]
    print(f"sweep {sweep}: {n} shard(s), runner options: {' '.join(s['runner_args'])}")
    print(f"{'shard':<8} {'job':<14} {'state':<12} {'elapsed':<10} {'detail':<14} progress")
    total = done = 0
    for i in range(1, n + 1):
        jid, st = "-", ("not submitted", "", "")
        for j in jobs:  # the latest submission of this shard
            if j["kind"] == "shards" and in_tasks(i, j["tasks"]):
                jid = f"{j['id']}_{i}"
                st = states.get(jid, ("unknown", "", ""))
        run = shard_run(sweep, i)
        p = progress(run)
        total += p[1] if p else 0
        done += p[0] if p else 0
        prog = (f"{p[0]}/{p[1]} cases{' complete' if p[2] else ''}" if p else
                "no run folder yet" if not run else "listing")
        print(f"{i}/{n:<6} {jid:<14} {st[0]:<12} {st[1]:<10} {st[2]:<14} {prog}")
    for j in jobs:
        if j["kind"] == "merge":
            st = states.get(j["id"], ("unknown", "", ""))
            print(f"{'merge':<8} {j['id']:<14} {st[0]:<12} {st[1]:<10} {st[2]:<14} "
                  f"after {j['after']}")
    merged = progress(os.path.join(sweep, "merged"))
    if merged:
        print(f"merged: {merged[0]}/{merged[1]} cases{' complete' if merged[2] else ''}: "
              f"{os.path.join(sweep, 'merged', 'report.md')}")
    else:
        print("merged: not yet")
    print(f"shards so far: {done}/{total} cases recorded (of the shards that have listed theirs)")
    for note in notes:
        print(f"note: {note}")


def in_tasks(i, tasks):
    for part in tasks.split(","):
        lo, _, hi = part.partition("-")
        if int(lo) <= i <= int(hi or lo):
            return True
    return False


def main(argv):
    if len(argv) < 1 or not os.path.isfile(os.path.join(argv[0], "sweep.json")):
        print("sweep_state.py: error: give a sweep folder (with sweep.json)", file=sys.stderr)
        return 2
    sweep = os.path.abspath(argv[0])
    s = load(os.path.join(sweep, "sweep.json"))
    runs = [shard_run(sweep, i) for i in range(1, s["shards"] + 1)]
    if argv[1:] == ["--run-dirs"]:
        print("\n".join(r for r in runs if r))
    elif argv[1:] == ["--unfinished"]:
        print(",".join(str(i) for i, r in enumerate(runs, 1)
                       if not (progress(r) or (0, 0, False))[2]))
    elif not argv[1:]:
        table(sweep, s)
    else:
        print(f"sweep_state.py: error: unknown option '{argv[1]}'", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
