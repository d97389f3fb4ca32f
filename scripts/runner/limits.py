"""The op suite's limits (copy bandwidth per device, matmul ceiling per dtype), measured once per
run folder into RUN/limits.json so that every case of the run is scored against the same figures
(runner/__init__.py, design). A mixin of session.Runner, on its state: suite, run_dir, cases,
args, timeout, program, limits, log."""

import os
import shlex

from runner.common import DEFAULT_TIMEOUT_S, QUICK_ARGS, read_json_results

LIMITS_PROBLEM = "matmul:m64n64k64"  # the tiny case of the op suite's limits invocation


def limits_in(doc):
    """The limits (system fields) of a myops result file, None when it holds no measured ones."""
    system = (doc or {}).get("system") or {}
    bw = system.get("bandwidth")
    if not isinstance(bw, dict) or "why" in bw or not (bw.get("cpu") or bw.get("cuda")):
        return None
    return {k: system[k] for k in ("bandwidth", "matmul_ceiling") if k in system}


class LimitsMixin:
    def measure_limits(self, measure=True):
        """The op suite's limits, once per run folder (see the module docstring): read back from
        RUN/limits.json when an earlier session measured them, else measured now (measure)."""
        if self.suite != "ops":
            return
        path = os.path.join(self.run_dir, "limits.json")
        self.limits = limits_in(read_json_results(path))
        if self.limits or not measure:
            return
        dtypes = sorted({c.get("dtype") or "fp32" for c in self.cases})
        backends = list(dict.fromkeys(c["backend"] for c in self.cases))
        cmd = [self.args.myconv, "--problem", LIMITS_PROBLEM, "--dtype", ",".join(dtypes),
               "--backend", ",".join(backends), "--json", path, "--no-source-diff"]
        for opt, val in QUICK_ARGS:
            cmd += [opt, val]
        self.log.say(f"{self.log.tag} measuring the machine's limits once for the run (copy bandwidth, "
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
            self.log.say(f"{self.log.tag} note: the limits could not be measured once ({self.program} "
                         f"exit {rc}: {last}); every case measures its own")
