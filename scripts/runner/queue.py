"""The case queue of a runner: the problems still to run, taken a batch at a time by invocations
of the program (isolation.py invoke). A plain runner owns its queue. The GPU workers of a --gpus
run (workers.py) share one: each takes the next problems from the claims file
RUN/workers/queue.jsonl (one JSON line per problem: problem, name, worker), appended under an
exclusive lock (RUN/workers/queue.lock), so that a worker that finishes early takes more and the
GPUs finish together whatever the cost estimate said (work stealing). A claimed problem stays its
worker's: what that worker leaves unrecorded (a crash, a hang: isolation.py records the culprit,
the rest go back to the front of its own queue; a kill: --resume) it runs itself.
A mixin of session.Runner, on its state: config, cases, records, run_dir, stop_signal, log."""

import collections
import fcntl
import json
import os

from runner.cases import case_key

QUEUE_FILE = "queue.jsonl"


def group_cases(cases):
    """(problem, name) -> that problem's cases, in case-list order."""
    groups = collections.OrderedDict()
    for c in cases:
        groups.setdefault((c["problem"], c.get("name", "")), []).append(c)
    return groups


def read_claims(path):
    """(problem, name) -> the worker that claimed it; a torn last line (a kill while appending)
    is not a claim."""
    claims = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    c = json.loads(line)
                except ValueError:
                    continue
                claims.setdefault((c["problem"], c.get("name", "")), c["worker"])
    except OSError:
        pass
    return claims


def chunk_size(unclaimed, workers, most):
    """Problems per claim: a share of what is left (guided self-scheduling, half of an even
    split), at least 1 and at most `most`, so that claims shrink towards the end of the queue."""
    return max(1, min(most, unclaimed // (2 * max(1, workers))))


class QueueMixin:
    def run_queue(self, groups):
        """Runs the unrecorded cases of groups ((problem, name) -> its cases), from the shared
        queue when this runner is a GPU worker of a --gpus run, else from its own."""
        local = collections.deque()  # (the problem's first case, its backends to run)
        shared = (self.config.get("worker") or {}).get("queue")
        if not shared:
            for group in groups.values():
                todo = [c["backend"] for c in group if case_key(c) not in self.records]
                if todo:
                    local.append((group[0], todo))
        while self.stop_signal is None:
            if not local and shared:
                local.extend(self.claim(groups, os.path.join(self.run_dir, shared)))
            if not local:
                return
            rest = self.invoke(self.take_batch(local))
            if rest is None:
                return
            local.extendleft(reversed(rest))  # the unrecorded problems, first

    def claim(self, groups, path):
        """The next problems of the shared queue for this worker, claimed under the lock: first
        those it claimed before and has not finished (a resumed worker), else a chunk of the
        unclaimed ones with one backend list (isolation.py take_batch)."""
        me = self.config["worker"]["name"]
        with open(path + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            claims = read_claims(path)
            mine, free = [], []
            for key, group in groups.items():
                todo = [c["backend"] for c in group if case_key(c) not in self.records]
                owner = claims.get(key)
                if owner == me and todo:
                    mine.append((group[0], todo))
                elif owner is None and todo:
                    free.append((group[0], todo))
            if mine:
                return self.in_case_order(mine)
            if not free:
                return []
            limit = chunk_size(len(free), self.config["worker"].get("sharing", 1),
                               self.batch_limit())
            chunk = [free[0]]
            for entry in free[1:]:
                if len(chunk) >= limit or not self.batchable(chunk[0], entry):
                    break
                chunk.append(entry)
            with open(path, "a", encoding="utf-8") as f:
                for pc, _ in chunk:
                    f.write(json.dumps({"problem": pc["problem"], "name": pc.get("name", ""),
                                        "worker": me}) + "\n")
                f.flush()
                os.fsync(f.fileno())
        self.log.detail(f"{self.log.tag} claimed {len(chunk)} problem(s) of the shared queue "
                        f"({len(free) - len(chunk)} left unclaimed)")
        return self.in_case_order(chunk)
