#!/usr/bin/env python3
"""Fuzzes myconv's command line: random and mutated argument lists, built from its real options
with good, bad and garbage values. The contract: exit 0, or exit 2 with exactly one line on stderr
("myconv: error: ..."); never a signal, a hang, a traceback-like multi-line error, or a partial
output file. Most runs end with --list-cases (everything is validated before listing), so the
test stays quick; some run a tiny problem for real.

Run: python3 tests/test_cli_fuzz.py path/to/myconv (CTest: cli_fuzz). Fixed seed; the environment
variables MYCONV_FUZZ_SEED, MYCONV_FUZZ_RUNS (60) and MYCONV_FUZZ_ITERATIONS (a multiplier) change
it and scale it.
"""

import os
import random
import shutil
import subprocess
import sys
import tempfile

OPTIONS = {
    "--input_size": ["16", "8,12", "0", "-1", "abc", "99999999999", "1"],
    "--kernel_size": ["3", "1,3", "0", "7", "x"],
    "--batch_size": ["1", "2", "0", "-3"],
    "--in_channels": ["4", "6", "0", "1,2"],
    "--out_channels": ["8", "3", "0"],
    "--stride": ["1", "2", "0"],
    "--padding": ["0", "1", "-1"],
    "--dilation": ["1", "2", "0"],
    "--groups": ["1", "2", "4", "0"],
    "--dtype": ["fp32", "bf16", "fp16,tf32", "fp64", ""],
    "--layout": ["nchw", "nhwc", "chwn"],
    "--problem": ["mb1ic2ih8oc2kh3", "mb1ic2ih8oc2kh3dh1", "mb2_ic3oc4_ih9oh5kh3sh2ph1n\"a b\"",
                  "mb1ic2id3ih4iw4oc2kd2kh2kw2", "mb1ic2ih8oc2kh3sw2", "mbXic", "", "n\""],
    "--shapes": ["@shapes", "@missing", "@empty", "@bad"],
    "--backend": ["libtorch_cpu", "onednn_cpu,halide_cpu", "nosuch", "cudnn"],
    "--halide-schedule": ["manual", "manual_basic", "li2018", "fast"],
    "--halide-tile": ["auto", "c128", "w4", "c999", ""],
    "--variant": ["1", "9", "10", "auto", "search", "x"],
    "--cudnn-api": ["graph", "legacy", "x"],
    "--cudnn-algo": ["heuristic", "search", "3", "-1", "nan"],
    "--timing": ["real", "pure", "fake"],
    "--pure-runs": ["1", "0", "-5"],
    "--warmup": ["0", "2", "-1"],
    "--min-iters": ["1", "0"],
    "--max-iters": ["1", "3", "0"],
    "--min-time-ms": ["0", "5", "-1"],
    "--max-time-ms": ["1", "5", "0"],
    "--target-cv": ["0.02", "-1", "inf"],
    "--seed": ["7", "-1", "18446744073709551615", "x"],
    "--json": ["@out.json", "@no/such/dir/out.json"],
    "--csv": ["@out.csv"],
    "--trace-calls": ["1", "0"],
}
FLAGS = ["--strict", "--no-graph", "--cold-cache", "--torch-cudnn-benchmark", "--debug",
         "--list-backends", "--version", "--help", "--foo", "-x", "--"]


def main():
    myconv = sys.argv[1]
    rng = random.Random(int(os.environ.get("MYCONV_FUZZ_SEED", "20261123")))
    runs = int(os.environ.get("MYCONV_FUZZ_RUNS", "60"))
    runs *= max(1, int(os.environ.get("MYCONV_FUZZ_ITERATIONS", "1")))
    work = tempfile.mkdtemp()
    files = {"@shapes": os.path.join(work, "shapes.txt"), "@empty": os.path.join(work, "empty.txt"),
             "@bad": os.path.join(work, "bad.txt"), "@missing": os.path.join(work, "missing.txt"),
             "@out.json": os.path.join(work, "out.json"), "@out.csv": os.path.join(work, "out.csv"),
             "@no/such/dir/out.json": os.path.join(work, "no", "such", "dir", "out.json")}
    with open(files["@shapes"], "w") as f:
        f.write('# fuzz\n--dir=FWD_B\nmb1ic2ih8oc2kh3n"x"\nmb1ic2ih9oc2kh3 mb1ic2ih8oc2kh3\n')
    open(files["@empty"], "w").close()
    with open(files["@bad"], "w") as f:
        f.write("mb1ic2ih8oc2kh3\nmb1ic2ih8oc2kq3\n")
    failures = 0
    try:
        for i in range(runs):
            args = []
            for _ in range(rng.randint(0, 5)):
                if rng.random() < 0.15:
                    args.append(rng.choice(FLAGS))
                    continue
                opt = rng.choice(list(OPTIONS))
                value = rng.choice(OPTIONS[opt])
                value = files.get(value, value)
                if rng.random() < 0.1:  # a mutated value
                    value = value[:rng.randint(0, len(value))] + rng.choice("=,-x\"_ ")
                args += [f"{opt}={value}"] if rng.random() < 0.3 else [opt, value]
            real = rng.random() < 0.1
            if real:
                args += ["--warmup", "0", "--min-time-ms", "0", "--max-time-ms", "2",
                         "--max-iters", "2", "--backend", "libtorch_cpu"]
            else:
                args.append("--list-cases")
            for f in (files["@out.json"], files["@out.csv"]):
                if os.path.exists(f):
                    os.remove(f)
            try:
                p = subprocess.run([myconv] + args, capture_output=True, text=True, timeout=120,
                                   errors="replace")
            except subprocess.TimeoutExpired:
                print(f"FAIL: hang: {args}")
                failures += 1
                continue
            err = p.stderr.strip().splitlines()
            errors = [line for line in err if not line.startswith("myconv: note: ")]
            problem = None
            if p.returncode < 0:
                problem = f"killed by signal {-p.returncode}"
            elif p.returncode == 2:
                if len(errors) != 1 or not errors[0].startswith("myconv: error: "):
                    problem = f"exit 2 with stderr {err!r}"
                elif real and os.path.exists(files["@out.json"]):
                    problem = "exit 2 left an output file"
            elif p.returncode == 1 and "--strict" in args:
                pass  # a case incorrect or failed under --strict
            elif p.returncode != 0:
                problem = f"exit {p.returncode}: {err[-3:]!r}"
            if problem:
                failures += 1
                print(f"FAIL: {problem}: myconv {' '.join(args)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{runs - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
