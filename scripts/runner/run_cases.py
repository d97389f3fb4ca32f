#!/usr/bin/env python3
"""Runs the cases of one run folder through its suite's program (myconv for the conv suite, myops
for the op suite, mymlp, mytransformer); scripts/run_all_experiments.sh calls it after the
set-up and the build (users call that script, whose --help has the options).

  run_cases.py --run-dir RUN --myconv BIN [--suite conv|ops|mlp|transformer]
               [--grid-arg=ARG ...] [--extra-arg=ARG ...] [--quick] [--timeout S] [--label TEXT]
               [--commit] [--verbose] [--prepare-only] [--plan] [--shard I/N]
               [--cost-from RESULTS.json] [--gpus all|N|LIST] [--isolate] [--no-report]
               [--hf-reference] [--trust-check] [--inductor-reference] [--trace]
  run_cases.py --run-dir RUN --myconv BIN --resume|--prepared [--timeout S] [--commit] [--verbose]
  run_cases.py --run-dir RUN --merge-only        rebuild results.json/csv from RUN/cases/
(--myconv names the suite's program, myops too; --prepare-only writes run.json and cases.jsonl
and stops, --prepared then runs them: run_all_experiments.sh --suite all lists every suite's
cases before it runs any, so that bad options fail at once.)

The work is done by the package scripts/runner/ (its __init__.py has the design: why it is built
this way); this file is the command line.
"""

import argparse
import os
import signal
import sys

# scripts/ on sys.path, in place of this file's own folder: the runner's modules are imported as
# the package runner, and runner/queue.py must not stand in for the standard library's queue.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
sys.path.insert(0, os.path.dirname(HERE))
from runner.common import PROG, PROGRAMS, Stopped, UsageError  # noqa: E402
from runner.session import Runner  # noqa: E402


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
    p.add_argument("--plan", action="store_true",
                   help="list the cases, print their count (and the shards'), run nothing")
    p.add_argument("--shard", help="I/N: run only shard I of N (runner/shard.py)")
    p.add_argument("--cost-from", help="an earlier results.json whose times balance the split")
    p.add_argument("--gpus", help="all|N|LIST: one worker per GPU (runner/workers.py)")
    p.add_argument("--isolate", action="store_true",
                   help="one program process per problem (default: many problems per process, "
                        "a new one after a crash or hang; runner/__init__.py)")
    p.add_argument("--no-report", action="store_true",
                   help="no report.md at the end (a --gpus worker: its coordinator reports)")
    p.add_argument("--hf-reference", action="store_true",
                   help="a new transformer run: after the cases, "
                        "scripts/references/hf_reference.py on the same models where transformers "
                        "and torch import (runner/reference.py)")
    p.add_argument("--trust-check", action="store_true",
                   help="a new conv or op run: after the cases, "
                        "scripts/references/trust_check.py times a sample of the libtorch_cuda "
                        "cases in Python PyTorch (runner/reference.py)")
    p.add_argument("--inductor-reference", action="store_true",
                   help="a new conv run: after the cases, "
                        "scripts/references/inductor_reference.py runs torch.compile on its GPU "
                        "problems (runner/inductor.py)")
    p.add_argument("--trace", action="store_true",
                   help="every program call writes Chrome traces into RUN/traces (--trace-dir)")
    args = p.parse_args(argv)
    if sys.stdout is not None:
        sys.stdout.reconfigure(line_buffering=True)
    if args.hf_reference and args.suite != "transformer":
        print(f"{PROG}: error: --hf-reference belongs to --suite transformer", file=sys.stderr)
        return 2
    if args.trust_check and (args.suite or "conv") not in ("conv", "ops"):
        print(f"{PROG}: error: --trust-check belongs to the conv and op suites", file=sys.stderr)
        return 2
    if args.inductor_reference and (args.suite or "conv") != "conv":
        print(f"{PROG}: error: --inductor-reference belongs to the conv suite", file=sys.stderr)
        return 2
    if not args.merge_only and not args.myconv:
        print(f"{PROG}: error: no program given (--myconv)", file=sys.stderr)
        return 2
    runner = Runner(args)
    try:
        return runner.run()
    except Stopped:
        name = signal.Signals(runner.stop_signal).name
        print(f"[{runner.program}] stopped by {name} before the first case", flush=True)
        return 128 + runner.stop_signal
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
