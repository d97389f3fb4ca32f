#!/usr/bin/env bash
# scripts/run_all_experiments.sh --suite transformer --quick --device cpu, with a Python that lacks
# transformers (the same run on a GPU host as without one; usage:
# test_run_all_transformer.sh path/to/mytransformer): a run folder <stamp>_<host>_transformer with
# valid JSON of suite "transformer" (the two tiny models of experiments/transformer/configs/ at
# preset quick_test), every case passed against its full recompute, one progress line per case
# naming the model, the transformer report (both models, why the HF reference did not run, plots);
# --resume runs only the missing case and, where a Python with transformers and torch is there
# (here a stand-in that writes hf_reference.py's records), the HF reference into
# RUN/hf_reference/, which the report then compares; bad options exit 2 with one line and leave
# no run folder.
set -u
bin=$(realpath "$1")
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
export MYTRANSFORMER_BIN=$bin  # no set-up, no build: this binary
unset MYCONV_PYTHON

expect_usage_error "conv option with --suite transformer" --suite transformer --layouts nhwc
expect_usage_error "op option with --suite transformer" --suite transformer --sizes small
expect_usage_error "--models with --suite conv" --suite conv --models gpt2
expect_usage_error "--no-hf-reference with --suite ops" --suite ops --no-hf-reference
expect_usage_error "bad --device" --suite transformer --device tpu
expect_usage_error "two dtypes" --suite transformer --dtypes fp16,bf16
expect_usage_error "tf32" --suite transformer --dtypes tf32
expect_usage_error "unknown preset" --suite transformer --preset huge
expect_usage_error "--model after --" --suite transformer --quick -- --model gpt2
expect_usage_error "--batch_sizes after --" --suite transformer --quick -- --batch_sizes 2
expect_usage_error "unknown model (mytransformer's check)" --suite transformer --quick \
  --models gpt9
expect_usage_error "unknown backend (mytransformer's check)" --suite transformer --quick \
  --backends cudnn
if "$runner" --suite transformer --preset list | grep -q "small_scale"; then
  ok "--preset list names the transformer presets"
else
  fail "--preset list"
fi

# A Python without transformers, so that the quick run records why the reference did not run
# on any host (the GPU host's python3 has transformers).
printf '#!/bin/sh\necho "ModuleNotFoundError: No module named transformers (test stand-in)" >&2\nexit 1\n' \
  >"$work/no_transformers"
chmod +x "$work/no_transformers"
if MYCONV_PYTHON=$work/no_transformers "$runner" --suite transformer --quick --device cpu \
  --output-dir "$work/out" >"$work/run.log" 2>&1; then
  ok "quick run exited 0"
else
  fail "quick run exited non-zero"; tail -n 30 "$work/run.log"
fi
run=$(ls -d "$work/out"/*_transformer 2>/dev/null | head -n 1)
if [ -z "$run" ]; then
  fail "no run folder *_transformer"; ls "$work/out"; finish; exit
fi
if python3 - "$run" "$work/run.log" <<'PY'
import csv, json, os, re, sys
run, log = sys.argv[1], sys.argv[2]
doc = json.load(open(os.path.join(run, "results.json")))
rs = doc["results"]
assert len(rs) == 8 and all(r["suite"] == "transformer" for r in rs), len(rs)
bad = [(r["problem"], r["name"], r["status"], r["reason"]) for r in rs if r["status"] != "passed"]
assert not bad, bad
assert {r["name"] for r in rs} == {"tiny-gpt2", "tiny-qwen2"}
assert {r["problem"] for r in rs} == {"mb1in32out20", "mb1in64out20", "mb2in32out20",
                                      "mb2in64out20"}
for r in rs:
    assert r["backend"] == "libtorch_cpu" and r["device"] == "cpu" and r["dtype"] == "fp32"
    assert r["correctness"]["passed"] and r["metrics"]["ttft_ms"] > 0, r["metrics"]
    assert r["command"].startswith("mytransformer --model ") and "--num-runs 1" in r["command"]
assert [m["name"] for m in doc["system"]["models"]] == ["tiny-gpt2", "tiny-qwen2"]
assert doc["run"]["hf_reference"]["skipped"], doc["run"]
assert len(list(csv.DictReader(open(os.path.join(run, "results.csv"))))) == len(rs)
progress = [l for l in open(log) if re.match(r"^\[\d+/\d+\] elapsed \S+ eta \S+ .*: ", l)]
assert len(progress) == len(rs), (len(progress), len(rs))
assert sum(" tiny-qwen2 libtorch_cpu: passed" in l for l in progress) == 4, progress
assert "HF reference skipped: " in open(log).read()
report = open(os.path.join(run, "report.md")).read()
for s in ("### tiny-gpt2, cpu, fp32", "### tiny-qwen2, cpu, fp32", "## Hugging Face reference",
          "Not run: "):
    assert s in report, s
plots = [f for f in os.listdir(os.path.join(run, "plots")) if f.endswith(".png")]
assert plots and all(os.path.getsize(os.path.join(run, "plots", f)) > 0 for f in plots), plots
print(f"{len(rs)} cases passed, {len(plots)} plots")
PY
then ok "run folder: JSON, CSV, progress lines, report and plots"; else fail "run folder contract"; fi

# --resume after a lost case: that case runs again; and the HF reference, now that a "Python with
# transformers and torch" is there: a stand-in that imports nothing and writes records as
# hf_reference.py does (one per case and method), for the plumbing, not for the numbers.
# The last case leaves the last invocation's files (one process ran that model's 4 problems).
last=$(ls "$run"/cases/*.json | tail -n 1)
python3 - "$last" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["results"].pop()
json.dump(doc, open(sys.argv[1], "w"))
csv_path = sys.argv[1][:-len(".json")] + ".csv"
rows = open(csv_path).read().splitlines(True)
open(csv_path, "w").write("".join(rows[:-1]))
PY
cat >"$work/python" <<'SH'
#!/usr/bin/env bash
[ "$1" != -c ] || exit 0  # the runner's check: import transformers, torch
shift  # scripts/references/hf_reference.py
exec python3 - "$@" <<'PY'
import argparse, json, os, sys
ap = argparse.ArgumentParser()
for a in ("--model", "--device", "--dtype", "--preset", "--mytransformer", "--output", "--seed",
          "--warmup"):
    ap.add_argument(a)
a = ap.parse_args()
assert os.access(a.mytransformer, os.X_OK), a.mytransformer
grid = json.load(open(os.path.join(os.environ["ROOT"], "experiments/transformer/presets.json")))
grid = grid[a.preset]
name = os.path.splitext(os.path.basename(a.model))[0]
rs = []
for b in grid["batch_sizes"]:
    for n in grid["input_lengths"]:
        m = {"ttft_ms": 1.0, "decode_ms_per_token_median": 0.5, "total_latency_ms": 8.5}
        rs.append({"suite": "transformer", "backend": "hf_transformers", "device": a.device,
                   "problem": f"mb{b}in{n}out{grid['output_length']}", "name": name,
                   "dtype": a.dtype, "status": "passed", "reason": "",
                   "params": {"task": "generate", "batch_size": b, "input_length": n,
                              "output_length": grid["output_length"], "model": name},
                   "extra": {"method": "manual"}, "metrics": m})
json.dump({"schema_version": 2, "system": {"model": {"name": name}, "stand_in": True},
           "results": rs}, open(a.output, "w"))
print(f"results: {a.output}")
PY
SH
chmod +x "$work/python"
if ROOT=$root MYCONV_PYTHON=$work/python "$runner" --resume "$run" >"$work/resume.log" 2>&1; then
  ok "--resume exited 0"
else
  fail "--resume exited non-zero"; tail -n 20 "$work/resume.log"
fi
if python3 - "$run" "$work/resume.log" <<'PY'
import json, os, re, sys
run, log = sys.argv[1], sys.argv[2]
text = open(log).read()
progress = [l for l in text.splitlines() if re.match(r"^\[\d+/\d+\] elapsed \S+ eta \S+ .*: ", l)]
assert len(progress) == 1 and progress[0].startswith("[8/8]"), progress
doc = json.load(open(os.path.join(run, "results.json")))
assert len(doc["results"]) == 8 and all(r["status"] == "passed" for r in doc["results"])
hf = doc["run"]["hf_reference"]
assert not hf.get("skipped") and [(r["model"], r["status"]) for r in hf["runs"]] == [
    ("tiny-gpt2", "done"), ("tiny-qwen2", "done")], hf
for r in hf["runs"]:
    assert "--preset quick_test" in r["command"] and "--device cpu" in r["command"], r["command"]
    assert os.path.exists(os.path.join(run, "hf_reference", r["file"])), r
report = open(os.path.join(run, "report.md")).read()
assert "hf_reference/tiny-qwen2_fp32.json" in report
# The reference's records sit in the tables and are compared with libtorch_eager's.
assert report.count("| hf_transformers (manual) | tiny-qwen2/cpu/fp32 |") == 4, report
PY
then ok "--resume: the missing case, then the HF reference in the report"; else fail "--resume contract"; fi

finish
