#!/usr/bin/env python3
"""Merges the shards of one sweep (run folders of `run_all_experiments.sh --shard I/N`, from one
host or many) into one run folder: results.json and results.csv in the order of the full case
list, report.md and plots/, run.json and cases.jsonl, all_experiments.txt (every shard's log one
after the other), and each shard's system description side by side (results.json `systems`).

  merge_results.py RUN_DIR... [--output-dir DIR] [--partial]

--output-dir: the merged run folder (default: <first shard's folder>/../<stamp>_merged); an
existing one is rewritten only when it holds an earlier merge. Refused with one line and exit 2:
a folder that is not a shard, shards of different case lists (or of different source, suite or
timing options), a duplicate shard, a missing or incomplete shard, unless --partial, which merges
what is there and says what is missing (the merged run is then marked incomplete).
"""

import argparse
import datetime
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from runner.common import PROGRAMS, Log, UsageError, shown, utc_now, write_atomic  # noqa: E402
from runner.merge import Part, check_same_run, copy_source_diff, write_merged  # noqa: E402
from runner.session import make_report  # noqa: E402

PROG = "merge_results.py"


def check_shards(parts, partial):
    """The shards ordered by index, and what is missing (lines); UsageError on refusals."""
    for p in parts:
        if not isinstance(p.config.get("shard"), dict):
            raise UsageError(f"'{shown(p.path)}' is not a shard (its run.json has no `shard`: "
                             "run with --shard I/N)")
    first = parts[0]
    a = first.config["shard"]
    for p in parts[1:]:
        b = p.config["shard"]
        if (a["case_list_sha256"], a["count"]) != (b["case_list_sha256"], b["count"]):
            raise UsageError(f"shards of different case lists: '{shown(first.path)}' (shard "
                             f"{a['index']}/{a['count']} of {a['cases_total']} cases) and "
                             f"'{shown(p.path)}' (shard {b['index']}/{b['count']} of "
                             f"{b['cases_total']} cases)")
    check_same_run(parts, "shards")
    seen = {}
    for p in parts:
        i = p.config["shard"]["index"]
        if i in seen:
            raise UsageError(f"duplicate shard {i}/{a['count']}: '{shown(seen[i].path)}' and "
                             f"'{shown(p.path)}'")
        seen[i] = p
    missing = []
    absent = [i for i in range(1, a["count"] + 1) if i not in seen]
    if absent:
        names = ", ".join(f"{i}/{a['count']}" for i in absent)
        missing.append(f"shard(s) {names} not given")
    for i, p in sorted(seen.items()):
        if not p.complete:
            missing.append(f"shard {i}/{a['count']} ('{shown(p.path)}') has {p.recorded} of "
                           f"{len(p.cases)} cases (finish it: run_all_experiments.sh --resume "
                           f"{shown(p.path)})")
    if missing and not partial:
        raise UsageError("; ".join(missing) + "; --partial merges what is there")
    return [p for _, p in sorted(seen.items())], missing


def output_dir(args, parts):
    out = args.output_dir or os.path.join(
        os.path.dirname(parts[0].path),
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d_%H%M%S") + "_merged")
    out = os.path.abspath(out)
    if os.path.isdir(out) and os.listdir(out):
        try:
            with open(os.path.join(out, "run.json"), encoding="utf-8") as f:
                earlier = json.load(f).get("merged_from")
        except (OSError, ValueError):
            earlier = None
        if not earlier:
            raise UsageError(f"--output-dir: '{shown(out)}' exists and holds no earlier merge")
        for name in ("results.json", "results.csv", "report.md", "source.diff"):
            if os.path.exists(os.path.join(out, name)):
                os.unlink(os.path.join(out, name))
    elif os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--output-dir: '{shown(out)}' is not a folder")
    if any(os.path.abspath(out) == p.path for p in parts):
        raise UsageError(f"--output-dir: '{shown(out)}' is one of the shards")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--output-dir: cannot create '{shown(out)}': {e.strerror}")
    return out


def merge(args):
    paths = list(dict.fromkeys(os.path.abspath(p) for p in args.run_dirs))
    if len(paths) < len(args.run_dirs):
        raise UsageError("a run folder is given twice")
    parts = [Part(p, shown(p)) for p in paths]
    shards, missing = check_shards(parts, args.partial)
    out = output_dir(args, shards)
    count = shards[0].config["shard"]["count"]
    placed = sorted((i, c) for p in shards for i, c in zip(p.config["shard"]["case_indices"],
                                                           p.cases))
    cases = [c for _, c in placed]
    total = shards[0].config["shard"]["cases_total"]
    merged_from = [{"dir": os.path.relpath(p.path, out),
                    "shard": f"{p.config['shard']['index']}/{count}",
                    "host": (p.doc.get("system") or {}).get("host") or p.config.get("host"),
                    "cases": len(p.cases), "recorded": p.recorded, "complete": p.complete}
                   for p in shards]
    config = {k: v for k, v in shards[0].config.items() if k not in ("shard", "gpu", "workers")}
    config.update(created_utc=utc_now(), merged_from=merged_from, missing=missing,
                  cases_total=total)
    write_atomic(os.path.join(out, "cases.jsonl"), "".join(json.dumps(c) + "\n" for c in cases))
    write_atomic(os.path.join(out, "run.json"), json.dumps(config, indent=2) + "\n")
    copy_source_diff(shards, out)
    program = PROGRAMS.get(config.get("suite", "conv"), "myconv")
    run = {"runner": "scripts/run_all_experiments.sh", "suite": config.get("suite", "conv"),
           "label": config.get("label"),
           f"{program}_args": config.get("grid_args", []) + config.get("extra_args", []),
           "timeout_s": config.get("timeout_s"), "merged_from": merged_from,
           "missing": missing}
    logs = []
    for p in shards:
        try:
            with open(os.path.join(p.path, "all_experiments.txt"), encoding="utf-8",
                      errors="replace") as f:
                logs.append(f"== shard {p.config['shard']['index']}/{count}: {p.path}\n"
                            + f.read())
        except OSError:
            pass
    write_atomic(os.path.join(out, "all_experiments.txt"), "".join(logs))
    run = write_merged(out, cases, shards, run, cases_total=total)
    log = Log(os.path.join(out, "all_experiments.txt"), verbose=False, tag=f"[{program}]")
    statuses = {}
    with open(os.path.join(out, "results.json"), encoding="utf-8") as f:
        results = json.load(f)["results"]
    for r in results:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) or "none"
    log.say(f"{log.tag} merged {len(shards)} of {count} shard(s) into {shown(out)}: "
            f"{run['recorded']} of {total} cases ({summary}); results.json, results.csv")
    for m in missing:
        log.say(f"{log.tag} partial: {m}")
    make_report(out, log)
    return 0


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def main(argv=None):
    p = Parser(prog=PROG, description=__doc__.split("\n\n")[0],
               formatter_class=argparse.RawDescriptionHelpFormatter,
               epilog="exit codes: 0 merged; 2 refused or bad usage (one line on stderr).")
    p.add_argument("run_dirs", nargs="*", metavar="RUN_DIR", help="shard run folders")
    p.add_argument("--output-dir", metavar="DIR", help="the merged run folder")
    p.add_argument("--partial", action="store_true",
                   help="merge what is there when shards are missing or incomplete")
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    try:
        args = p.parse_args(argv)
        if not args.run_dirs:
            raise UsageError("give the shards' run folders")
        return merge(args)
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
