#!/usr/bin/env python3
"""Fuzzes the command lines of myconv, myops, mymlp and mytransformer. The contract: exit 0, or
exit 2 with exactly one line on stderr ("PROGRAM: error: ...", at most 300 characters); never a
signal, a hang, a multi-line error, or a file left behind by bad input.

Three parts:
  0. The shared grammar (core/grammar.hpp), the same in every program: each shared option's other
     spellings ('_' for '-', the plural of a list option, a backend's older name, "--x=v") list
     exactly the cases its documented spelling lists; bad values of the shared options (--threads,
     --format, --device, --backend, --dtype, an unknown option) exit 2 with one line; --format
     json, jsonl, csv and md put the results on stdout (the console report on stderr) and
     --threads is recorded in them; --available-only lists only the backends --list-backends
     calls available.
  1. Every hostile input class of issue 25, in every program that has the option: output paths
     that are folders, in missing folders or under a file; output folders that cannot be made;
     FIFOs and folders given as input files; NaN, infinity, a sign on the seed, empty list items
     and unreadable bounds; sizes whose counts overflow 64 bits; invocations whose cases cannot
     fit in memory (exit 2, the estimate and the memory named) and sweeps where only some cannot
     (those recorded `unsupported` with both numbers, the rest run); safetensors checkpoints whose
     tensors overlap or leave a gap; echoed input of 90 kB (CLI11's own messages too). Each must
     end within 5 s of the program's start-up time (its --version), and exit 2 must leave no file.
  2. Random and mutated argument lists built from myconv's real options with good, bad and garbage
     values; most end with --list-cases (everything is validated before listing), some run a tiny
     problem for real.

Run: python3 tests/cli/test_fuzz.py PROGRAM... (CTest: cli_fuzz; each program recognized by its
name, any subset). Fixed seed; MYCONV_FUZZ_SEED, MYCONV_FUZZ_RUNS (20) and MYCONV_FUZZ_ITERATIONS
(a multiplier) change and scale part 2; MYCONV_FUZZ_CORE_ONCE=1 runs the classes whose check is
core/'s in myconv only (the sanitizer job).
"""

import concurrent.futures
import csv
import io
import json
import os
import random
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import time

MAX_LINE = 300
HANG_S = 5

OPTIONS = {
    "--input_size": ["16", "8,12", "0", "-1", "abc", "99999999999", "1", "64,,32", "8,"],
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
                  "mb1ic2id3ih4iw4oc2kd2kh2kw2", "mb1ic2ih8oc2kh3sw2", "mbXic", "", "n\"",
                  "mb1099511627776ic1099511627776ih1oc1kh1"],
    "--shapes": ["@shapes", "@missing", "@empty", "@bad", "@dir", "@fifo"],
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
    "--max-time-ms": ["1", "5", "0", "nan"],
    "--target-cv": ["0.02", "-1", "inf"],
    "--seed": ["7", "-1", "18446744073709551615", "x"],
    "--json": ["@out.json", "@no/such/dir/out.json", "@dir"],
    "--csv": ["@out.csv", "@dir"],
    "--trace-calls": ["1", "0"],
}
FLAGS = ["--strict", "--no-graph", "--cold-cache", "--torch-cudnn-benchmark", "--debug",
         "--list-backends", "--version", "--help", "--foo", "-x", "--"]


def write_safetensors(path, tensors, data_size):
    """A safetensors file of (name, dtype, shape, begin, end) entries and data_size data bytes."""
    header = {name: {"dtype": dt, "shape": shape, "data_offsets": [b, e]}
              for name, dt, shape, b, e in tensors}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data_size))


class Fixtures:
    """The files the hostile inputs name, in a scratch folder (work/)."""

    def __init__(self, work):
        self.work = work
        j = lambda *p: os.path.join(work, *p)  # noqa: E731
        self.dir = j("dir")
        os.mkdir(self.dir)
        self.file = j("file")
        open(self.file, "w").close()
        self.fifo = j("fifo")
        os.mkfifo(self.fifo)
        self.out = j("out")
        os.mkdir(self.out)
        tiny = {"model_type": "gpt2", "vocab_size": 61, "n_embd": 16, "n_layer": 1, "n_head": 2,
                "n_positions": 32, "layer_norm_epsilon": 1e-05}
        self.tiny = j("tiny.json")
        json.dump(tiny, open(self.tiny, "w"))
        self.huge_vocab = j("huge_vocab.json")  # 1e12 tokens x 16: far past any memory
        json.dump(dict(tiny, vocab_size=10**12), open(self.huge_vocab, "w"))
        self.huge_dims = j("huge_dims.json")  # n_embd 2^62: its counts overflow 64 bits
        json.dump(dict(tiny, n_embd=2**62, n_head=2**61), open(self.huge_dims, "w"))
        # Checkpoints: tensors sharing bytes, a gap between two, a FIFO as the weights.
        for name, tensors, size in (
                ("overlap", [("wte.weight", "F32", [4], 0, 16), ("wpe.weight", "F32", [4], 8, 24)],
                 24),
                ("gap", [("wte.weight", "F32", [4], 0, 16), ("wpe.weight", "F32", [2], 24, 32)],
                 32)):
            os.mkdir(j(name))
            shutil.copy(self.tiny, j(name, "config.json"))
            write_safetensors(j(name, "model.safetensors"), tensors, size)
        os.mkdir(j("fifo_ckpt"))
        shutil.copy(self.tiny, j("fifo_ckpt", "config.json"))
        os.mkfifo(j("fifo_ckpt", "model.safetensors"))
        self.overlap, self.gap, self.fifo_ckpt = j("overlap"), j("gap"), j("fifo_ckpt")
        self.long = "mb1" + "ic1" * 30000  # a 90 kB descriptor

    def outputs(self):
        """Every path under work/out and the files next to the fixtures that were not there."""
        found = set()
        for root, dirs, files in os.walk(self.work):
            for n in dirs + files:
                found.add(os.path.relpath(os.path.join(root, n), self.work))
        return found


def hostile_cases(prog, f):
    """(what, args, env, expect) of every class that applies to prog, one run each (a class whose
    check lives in core/ once, e.g. every output file's, is run in each program by one of its
    options; myconv also runs the others); expect is a word the error line holds (exit 2), or
    "sweep" (exit 0, a case recorded unsupported for memory, the others run)."""
    d, file, fifo = f.dir, f.file, f.fifo
    quick = ["--warmup", "0", "--min-time-ms", "0", "--max-time-ms", "2", "--max-iters", "2"]
    # A small valid invocation of each program, and the options its checks are reached through.
    base = {"myconv": ["--problem", "mb1ic1ih8oc1kh3", "--backend", "onednn_cpu"],
            "myops": ["--problem", "relu:64", "--backend", "onednn_cpu", "--no-peaks"],
            "mymlp": ["--problem", "mlp:d8l1b4s1", "--no-ceiling", "--phase-steps", "1",
                      "--backend", "libtorch_eager_cpu"],
            "mytransformer": ["--model", f.tiny, "--device", "cpu", "--batch_sizes", "1",
                              "--input_lengths", "4", "--output_length", "2", "--num_runs", "1",
                              "--impl", "libtorch_eager"]}[prog]
    settings = base[2:]  # without the problem or the model
    c = []
    # MYCONV_FUZZ_CORE_ONCE=1 (the sanitizer job, where every run costs seconds): the classes
    # whose check is core/'s (driver.cpp, option_checks.cpp, paths.cpp), reached the same way
    # from every program, run in myconv only; each program's own classes run in every one.
    core_once = os.environ.get("MYCONV_FUZZ_CORE_ONCE") == "1" and prog != "myconv"

    def add(what, args, expect, keep_base=True, core=False):
        if not (core and core_once):
            c.append((what, (base if keep_base else []) + args, None, expect))

    # Output paths, checked before anything runs: a folder, a missing folder, a folder that
    # cannot be made.
    add("--json is a folder", ["--json", d], "is a folder", core=True)
    add("--csv in a missing folder", ["--csv", os.path.join(d, "no", "x.csv")], "does not exist",
        core=True)
    own_out = {"myconv": ["--save-tensors", file + "/t", "not a folder"],
               "myops": ["--markdown", file + "/m.md", "not a folder"],
               "mymlp": ["--profile", file + "/p", "not a folder"],
               "mytransformer": ["--dump-logits", d, "is a folder"]}[prog]
    add(f"{own_out[0]} cannot be written", own_out[:2], own_out[2])
    # Input paths: a FIFO or a folder refused at once, never opened (mymlp reads no file).
    own_in = {"myconv": "--shapes", "myops": "--ops-file", "mytransformer": "--config-file"}
    if prog in own_in:
        add(f"{own_in[prog]} is a FIFO", settings + [own_in[prog], fifo], "FIFO", keep_base=False)
        add(f"{own_in[prog]} is a folder", settings + [own_in[prog], d], "is a folder",
            keep_base=False)
    # Numbers: finite, in range with readable bounds, no sign on the seed; list items.
    add("--max-time-ms nan", ["--max-time-ms", "nan"], "finite", core=True)
    add("--max-time-ms 0 (bounds readable)", ["--max-time-ms", "0"], "above 0", core=True)
    add("--seed -1", ["--seed", "-1"], "unsigned", core=True)
    lists = {"myconv": ["--dtype", "fp32,,bf16"], "myops": ["--dtype", "fp32,,bf16"],
             "mymlp": ["--dtype", "fp32,,bf16"], "mytransformer": ["--input_lengths", "4,,8"]}
    add("an empty list item", lists[prog], "empty item", core=True)
    # Sizes whose counts overflow 64 bits.
    over = {"myconv": (["--problem", "mb1099511627776ic1099511627776ih1oc1kh1"], "64-bit"),
            "myops": (["--problem", "matmul:b1099511627776m1099511627776n1k1"], "2^40"),
            "mymlp": (["--matmul", "--matmul-dims", "99999999999999999999"], "matmul-dims"),
            "mytransformer": (["--model", f.huge_dims], "at most")}[prog]
    add("sizes past 64 bits", over[0] + settings, over[1], keep_base=False)
    # Memory: no case fits (exit 2, both numbers), or only some (recorded, the rest run).
    huge = {"myconv": ["--problem", "mb1ic1024ih32768oc1024kh1"],
            "myops": ["--problem", "add:65536x65536x16"],
            "mymlp": ["--problem", "mlp:d131072l1048576b8s1"],
            "mytransformer": ["--model", f.huge_vocab]}[prog]
    add("no case fits in memory", huge + settings, "does not fit in memory", keep_base=False)
    if prog == "mytransformer":
        add("some cases do not fit", ["--model", f"{f.tiny},{f.huge_vocab}"] + settings + quick,
            "sweep", keep_base=False)
    else:
        add("some cases do not fit", huge + base + quick, "sweep", keep_base=False)
    # Long echoed input: the line stays short.
    # (mytransformer: its cases are --problem or the grid options, not both)
    add("a 90 kB descriptor", (["--device", "cpu"] if prog == "mytransformer" else settings) +
        ["--problem", f.long], "...", keep_base=False)
    if prog == "mytransformer":  # the checkpoints: a FIFO, tensors that overlap or leave a gap
        add("--model is a FIFO", ["--model", fifo] + settings, "FIFO", keep_base=False)
        add("checkpoint weights are a FIFO", ["--model", f.fifo_ckpt] + settings, "FIFO",
            keep_base=False)
        add("checkpoint tensors overlap", ["--model", f.overlap] + settings, "overlap",
            keep_base=False)
        add("checkpoint leaves a gap", ["--model", f.gap] + settings, "gap", keep_base=False)
    if prog == "myconv":  # the other forms of the core's checks, once
        add("--csv is a folder", ["--csv", d], "is a folder")
        add("--json under a file", ["--json", os.path.join(file, "x.json")], "not a folder")
        add("--trace-dir under a file", ["--trace-dir", os.path.join(file, "t")], "not a folder")
        add("--target-cv inf", ["--target-cv", "inf"], "finite")
        add("--warmup -1 (bounds readable)", ["--warmup", "-1"], "--warmup")
        add("a trailing comma", ["--input_size", "8,"], "empty item", keep_base=False)
        add("a 10 kB unknown option (CLI11's message)", ["--" + "x" * 10000], "...")
    return c


def grammar_cases(prog, f):
    """prog's (documented spelling of the shared options, [other spellings of the same], bad
    arguments with a word of their error line). Each spelling is one invocation (--list-cases),
    so the check costs a few start-ups per program."""
    base = {"myconv": ["--input-size", "8", "--kernel-size", "3"],
            "myops": ["--op", "relu", "--no-peaks"],
            "mymlp": ["--dim", "8", "--num-layers", "1", "--num-steps", "1", "--no-ceiling"],
            "mytransformer": ["--model", f.tiny, "--device", "cpu", "--input-length", "4",
                              "--output-length", "2"]}[prog]
    pair = "libtorch_cpu,libtorch_cuda"  # --available-only leaves out the one that cannot run
    doc = base + ["--backend", pair, "--dtype", "fp32", "--min-time-ms", "1",
                  "--max-iters", "3", "--available-only"]
    alts = [base + ["--backends", pair, "--dtypes", "fp32", "--min_time_ms", "1",
                    "--max_iters", "3", "--available_only"],
            base + ["--backend=" + pair, "--dtypes=fp32", "--min_time_ms=1",
                    "--max-iters=3", "--available-only"]]
    extra = {"myconv": (["--batch-size", "2"], [["--batch_sizes", "2"], ["--batch-sizes=2"]]),
             "myops": (["--size", "small"], [["--sizes", "small"], ["--sizes=small"]]),
             "mymlp": (["--batch-size", "2"], [["--batch_sizes", "2"], ["--batch_size=2"]]),
             "mytransformer": (["--batch-size", "2", "--num-runs", "2"],
                               [["--batch_sizes", "2", "--num_runs", "2"],
                                ["--batch-sizes=2", "--num_runs=2"]])}[prog]
    doc += extra[0]
    alts = [a + e for a, e in zip(alts, extra[1])]
    # A backend's older name (kBackendAliases), the seed tool's --impl.
    if prog == "mymlp":
        alts.append(doc[:doc.index("--backend")] + ["--backend", "libtorch_eager_cpu,libtorch_eager_cuda"] +
                    doc[doc.index("--backend") + 2:])
    if prog == "mytransformer":
        alts.append(doc[:doc.index("--backend")] + ["--impl", "libtorch_eager"] +
                    doc[doc.index("--backend") + 2:])
    # Bad values: each program's own backend and dtype lists; the core's checks (the same code in
    # every program) one per program, in turn.
    bad = [(["--backends", "nosuch"], "nosuch"), (["--dtypes", "fp64"], "fp64")]
    bad.append({"myconv": (["--threads", "0"], "--threads"),
                "myops": (["--format", "xml"], "--format"),
                "mymlp": (["--device", "99"], "--device"),
                "mytransformer": (["--dtype", "tf32"], "tf32")}[prog])
    return base, doc, alts, bad


def listed(path, args):
    p = subprocess.run([path] + args + ["--list-cases"], capture_output=True, text=True,
                       errors="replace", timeout=120, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def available_backends(path):
    """The backends --list-backends calls available here (its table's fourth column)."""
    p = subprocess.run([path, "--list-backends"], capture_output=True, text=True, timeout=120)
    names = set()
    for line in p.stdout.splitlines()[2:]:
        w = line.split()
        if len(w) >= 4 and w[3] == "yes":
            names.add(w[0])
    return names


def run_grammar(path, f):
    prog = os.path.basename(path)
    base, doc, alts, bad = grammar_cases(prog, f)
    failures = total = 0

    def fail(what):
        nonlocal failures
        failures += 1
        print(f"FAIL: {prog}: grammar: {what}")

    total += 1
    rc, first, err = listed(path, doc)
    if rc != 0 or not first.strip():
        fail(f"{shlex.join(doc)}: exit {rc}, {err.strip()[-200:]!r}")
    else:
        for other in alts:
            rc, out, err = listed(path, other)
            if rc != 0 or out != first:
                fail(f"{shlex.join(other)} lists other cases than {shlex.join(doc)} (exit {rc}, "
                     f"{err.strip()[-200:]!r})")
                break
        else:
            print(f"ok: {prog}: grammar: {len(alts)} other spellings list the same cases")
    for args, word in bad:
        total += 1
        p = subprocess.run([path] + base + args + ["--list-cases"], capture_output=True,
                           text=True, errors="replace", timeout=120, stdin=subprocess.DEVNULL)
        problem = check_line(prog, p, word)
        if problem:
            fail(f"{args}: {problem}")
        else:
            print(f"ok: {prog}: grammar: {' '.join(args)} refused: {p.stderr.strip()}")
    # --available-only (in doc): the backends --list-backends calls available, of those asked
    # (mytransformer: of its --device's, the CPU).
    total += 1
    avail = available_backends(path) & {"libtorch_cpu", "libtorch_cuda"}
    names = {json.loads(line)["backend"] for line in first.splitlines() if line.strip()}
    if not names or not names <= avail or (prog != "mytransformer" and names != avail):
        fail(f"--available-only listed {sorted(names)}; available here: {sorted(avail)}")
    else:
        print(f"ok: {prog}: grammar: --available-only lists {sorted(names)}")
    # --format: the results on stdout, parseable; --threads recorded in each CPU result.
    quick = ["--warmup", "0", "--min-time-ms", "0", "--max-time-ms", "2", "--max-iters", "2",
             "--backend", "libtorch_cpu", "--threads", "1"]
    if prog == "mytransformer":
        quick += ["--num-runs", "1", "--batch-size", "1"]
    for fmt in {"myconv": ("json", "md"), "myops": ("jsonl",), "mymlp": ("csv",),
                "mytransformer": ("json",)}[prog]:
        total += 1
        one = ["--problem", "relu:64", "--no-peaks"] if prog == "myops" else base  # one case
        p = subprocess.run([path] + one + quick + ["--format", fmt], capture_output=True,
                           text=True, errors="replace", timeout=300, stdin=subprocess.DEVNULL)
        out = p.stdout
        try:
            if p.returncode != 0:
                raise ValueError(f"exit {p.returncode}: {p.stderr.strip()[-300:]}")
            if fmt == "json":
                doc = json.loads(out)
                records = doc["results"]
                assert doc["system"]["cpu_threads"] == 1, doc["system"].get("cpu_threads")
            elif fmt == "jsonl":
                records = [json.loads(line) for line in out.splitlines()]
            elif fmt == "csv":
                rows = list(csv.DictReader(io.StringIO(out)))
                records = [{"backend": r["backend"], "device": r["device"]} for r in rows]
            else:  # md: the summary table, backend in the second column
                lines = out.splitlines()
                head = "| problem | backend | device | dtype | status |"
                assert lines[0].startswith(head), lines[0]
                records = [{"backend": line.split("|")[2].strip(),
                            "device": line.split("|")[3].strip()} for line in lines[2:]]
            assert records, "no results on stdout"
            for r in records:
                assert (r["backend"], r["device"]) == ("libtorch_cpu", "cpu"), r
                if "extra" in r:  # json and jsonl: --threads recorded in each CPU result
                    assert r["extra"].get("threads_asked") == 1, r["extra"]
            assert "\n== " not in out, "the console report on stdout"
            print(f"ok: {prog}: grammar: --format {fmt}: {len(records)} result(s) on stdout")
        except (ValueError, AssertionError, KeyError, IndexError) as e:
            fail(f"--format {fmt}: {e}; stdout {out[:300]!r}")
    return total, failures


def check_line(prog, p, word):
    err = [line for line in p.stderr.strip().splitlines()
           if not line.startswith(f"{prog}: note: ")]
    if p.returncode != 2:
        return f"exit {p.returncode}, expected 2: {err[-3:]!r}"
    if len(err) != 1 or not err[0].startswith(f"{prog}: error: "):
        return f"exit 2 with stderr {err!r}"
    line = err[0]
    if len(line) > MAX_LINE:
        return f"an error line of {len(line)} characters"
    if re.search(r"\d{25}", line):  # a bound printed in full (1.79e+308 has 309 digits)
        return f"a number of 25 digits or more in {line!r}"
    if word.lower() not in line.lower():
        return f"the line lacks {word!r}: {line!r}"
    return None


def check_sweep(p, json_path):
    if p.returncode != 0:
        return f"exit {p.returncode}: {p.stderr.strip().splitlines()[-3:]!r}"
    try:
        results = json.load(open(json_path))["results"]
    except (OSError, ValueError, KeyError) as e:
        return f"no result file ({e})"
    unfit = [r for r in results if r["status"] == "unsupported"
             and "does not fit in memory" in r["reason"]]
    ran = [r for r in results if r not in unfit]
    if not unfit or not ran:
        return f"expected cases recorded unsupported for memory and others run: {results!r}"
    for r in unfit:
        m = r.get("extra", {}).get("memory", {})
        if not (m.get("host_bytes_estimate", 0) > 0 and "host_bytes_available" in m
                and "available" in r["reason"]):
            return f"an unsupported record without both numbers: {r!r}"
    return None


def startup_s(path):
    start = time.monotonic()
    subprocess.run([path, "--version"], capture_output=True, timeout=120)
    return time.monotonic() - start


def run_hostile(path, f):
    prog = os.path.basename(path)
    limit = HANG_S + startup_s(path)
    failures = 0
    cases = hostile_cases(prog, f)
    for what, args, env, expect in cases:
        out_json = os.path.join(f.out, "out.json")
        before = f.outputs()
        if expect == "sweep":
            args = args + ["--json", out_json]
        try:
            start = time.monotonic()
            p = subprocess.run([path] + args, capture_output=True, text=True, errors="replace",
                               timeout=limit, env=dict(os.environ, **(env or {})),
                               stdin=subprocess.DEVNULL)
            elapsed = time.monotonic() - start
        except subprocess.TimeoutExpired:
            print(f"FAIL: {prog}: {what}: no answer within {limit:.1f} s (hang)")
            failures += 1
            continue
        if p.returncode < 0:
            problem = f"killed by signal {-p.returncode}"
        elif expect == "sweep":
            problem = check_sweep(p, out_json)
        else:
            problem = check_line(prog, p, expect)
            left = sorted(f.outputs() - before)
            if not problem and left:
                problem = f"exit 2 left {left}"
        for name in sorted(f.outputs() - before):  # the next case starts clean
            full = os.path.join(f.work, name)
            if os.path.isdir(full):
                shutil.rmtree(full, ignore_errors=True)
            elif os.path.exists(full):
                os.remove(full)
        if problem:
            failures += 1
            shown = " ".join(a if len(a) < 80 else a[:40] + "..." for a in args)
            print(f"FAIL: {prog}: {what}: {problem}: {prog} {shown}")
        else:
            print(f"ok: {prog}: {what} ({elapsed:.1f} s)")
    return len(cases), failures


def run_random(myconv, work, f):
    rng = random.Random(int(os.environ.get("MYCONV_FUZZ_SEED", "20261123")))
    runs = int(os.environ.get("MYCONV_FUZZ_RUNS", "20"))
    runs *= max(1, int(os.environ.get("MYCONV_FUZZ_ITERATIONS", "1")))
    files = {"@shapes": os.path.join(work, "shapes.txt"), "@empty": os.path.join(work, "empty.txt"),
             "@bad": os.path.join(work, "bad.txt"), "@missing": os.path.join(work, "missing.txt"),
             "@out.json": os.path.join(f.out, "r.json"), "@out.csv": os.path.join(f.out, "r.csv"),
             "@no/such/dir/out.json": os.path.join(work, "no", "such", "dir", "out.json"),
             "@dir": f.dir, "@fifo": f.fifo}
    with open(files["@shapes"], "w") as fh:
        fh.write('# fuzz\n--dir=FWD_B\nmb1ic2ih8oc2kh3n"x"\nmb1ic2ih9oc2kh3 mb1ic2ih8oc2kh3\n')
    open(files["@empty"], "w").close()
    with open(files["@bad"], "w") as fh:
        fh.write("mb1ic2ih8oc2kh3\nmb1ic2ih8oc2kq3\n")
    limit = 120
    failures = 0
    for _ in range(runs):
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
        shutil.rmtree(f.out, ignore_errors=True)
        os.mkdir(f.out)
        try:
            p = subprocess.run([myconv] + args, capture_output=True, text=True, timeout=limit,
                               errors="replace", stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            print(f"FAIL: hang: {args}")
            failures += 1
            continue
        err = [line for line in p.stderr.strip().splitlines()
               if not line.startswith("myconv: note: ")]
        problem = None
        if p.returncode < 0:
            problem = f"killed by signal {-p.returncode}"
        elif p.returncode == 2:
            if len(err) != 1 or not err[0].startswith("myconv: error: "):
                problem = f"exit 2 with stderr {err!r}"
            elif len(err[0]) > MAX_LINE:
                problem = f"an error line of {len(err[0])} characters"
            elif os.listdir(f.out):
                problem = f"exit 2 left {os.listdir(f.out)}"
        elif p.returncode == 1 and "--strict" in args:
            pass  # a case incorrect or failed under --strict
        elif p.returncode != 0:
            problem = f"exit {p.returncode}: {err[-3:]!r}"
        if problem:
            failures += 1
            print(f"FAIL: {problem}: myconv {' '.join(args)}")
    return runs, failures


def main():
    programs = sys.argv[1:]
    known = {"myconv", "myops", "mymlp", "mytransformer"}
    if not programs or any(os.path.basename(p) not in known for p in programs):
        print(f"usage: test_fuzz.py PROGRAM... (each one of {', '.join(sorted(known))})")
        return 2
    work = tempfile.mkdtemp()
    total = failures = 0
    try:
        f = Fixtures(work)
        # The programs side by side (2 at a time): each one's grammar, then its hostile cases.
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            done = []
            for i, path in enumerate(programs):
                sub, grammar = os.path.join(work, f"p{i}"), os.path.join(work, f"g{i}")
                os.mkdir(sub)
                os.mkdir(grammar)
                done.append(pool.submit(run_grammar, path, Fixtures(grammar)))
                done.append(pool.submit(run_hostile, path, Fixtures(sub)))
            for fut in done:
                n, bad = fut.result()
                total += n
                failures += bad
        myconv = next((p for p in programs if os.path.basename(p) == "myconv"), None)
        if myconv:
            n, bad = run_random(myconv, work, f)
            total += n
            failures += bad
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
