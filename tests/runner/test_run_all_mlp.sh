#!/usr/bin/env bash
# scripts/run_all_experiments.sh --suite mlp --quick on the CPU (usage: test_run_all_mlp.sh
# path/to/mymlp): a run folder <stamp>_<host>_mlp with valid JSON of suite "mlp" (the tiny example,
# the four scaling studies, the square matmuls), every case passed against float64, one progress
# line per case, the MLP report (report.md with the scaling table and its fitted exponents, plots);
# bad options exit 2 with one line and leave no run folder; scripts/references/mlp_reference.py
# refuses bad input likewise.
set -u
mymlp=$(realpath "$1")
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
export MYMLP_BIN=$mymlp  # no set-up, no build: this binary

expect_usage_error "conv option with --suite mlp" --suite mlp --preset seed
expect_usage_error "op option with --suite mlp" --suite mlp --sizes small
expect_usage_error "fp16 (mymlp's check)" --suite mlp --quick --dtypes fp16
expect_usage_error "unknown backend (mymlp's check)" --suite mlp --quick --backends cudnn

if "$runner" --suite mlp --quick --backend libtorch_cpu --output-dir "$work/out" \
    >"$work/run.log" 2>&1; then
  ok "quick run exited 0"
else
  fail "quick run exited non-zero"; tail -n 30 "$work/run.log"
fi
run=$(ls -d "$work/out"/*_mlp 2>/dev/null | head -n 1)
if [ -z "$run" ]; then
  fail "no run folder *_mlp"; ls "$work/out"
else
  if python3 - "$run" "$work/run.log" <<'PY'
import csv, json, os, re, sys
run, log = sys.argv[1], sys.argv[2]
doc = json.load(open(os.path.join(run, "results.json")))
rs = doc["results"]
assert rs and all(r["suite"] == "mlp" for r in rs), "suite"
bad = [(r["problem"], r["backend"], r["status"], r["reason"]) for r in rs if r["status"] != "passed"]
assert not bad, bad
names = {r["name"] for r in rs}
for p in ("num_steps", "num_layers", "batch_size", "dim"):
    assert any(n.startswith(f"scale_{p}_x") for n in names), p
assert any(r["problem"].startswith("mm:") for r in rs), "no square matmul"
for r in rs:
    if r["problem"].startswith("mlp:"):
        m = r["metrics"]
        assert m["forward_ms"] > 0 and m["backward_ms"] > 0 and m["tflops"] > 0, m
        assert r["correctness"]["passed"], r["correctness"]
assert len(list(csv.DictReader(open(os.path.join(run, "results.csv"))))) == len(rs)
progress = [l for l in open(log) if re.match(r"^\[\d+/\d+\] elapsed \S+ eta \S+ .*: ", l)]
assert len(progress) == len(rs), (len(progress), len(rs))
report = open(os.path.join(run, "report.md")).read()
assert "## Scaling studies" in report and "## Square matmuls" in report, "report sections"
rows = [l for l in report.split("## Scaling studies", 1)[1].split("\n## ", 1)[0].splitlines()
        if l.startswith("| ") and not l.startswith(("| parameter", "| ---"))]
assert len(rows) == 4, rows  # one fit per parameter for the one backend and dtype
for l in rows:
    b = float(l.split(" | ")[5])  # the fitted exponent, recomputed by the report from the cases
    assert b == b and abs(b) < 10, l
assert "## Targets (issue 12)" in report, "targets section"
# The Python reference: measured into references/ where python3 has torch (then in the report),
# else skipped with the reason in the log.
ref = os.path.join(run, "references", "python_reference.json")
text = open(os.path.join(run, "all_experiments.txt")).read()
if os.path.exists(ref):
    assert all(r["backend"].startswith("pytorch_python_") for r in json.load(open(ref))["results"])
    assert "pytorch_python_eager" in report, "the reference is not in the report"
else:
    assert "Python reference skipped: python3 has no torch" in text, "no reference, no reason"
plots = [f for f in os.listdir(os.path.join(run, "plots")) if f.endswith(".png")]
assert plots and all(os.path.getsize(os.path.join(run, "plots", f)) > 0 for f in plots), plots
print(f"{len(rs)} cases passed, {len(plots)} plots")
PY
  then ok "run folder: JSON, CSV, progress lines, report and plots"; else fail "run folder contract"; fi
fi

# The Python reference (scripts/references/mlp_reference.py, run beside mymlp on a GPU host)
# refuses bad input with one line and exit 2 before it imports torch (this machine's Python may
# have none).
for args in "--config mlp:d0l1b1s1" "--config bogus" "--dtype fp16" "--device tpu" \
    "--mymlp $work/nonexistent"; do
  # shellcheck disable=SC2086
  python3 "$root/scripts/references/mlp_reference.py" $args >"$work/stdout" 2>"$work/stderr"
  rc=$?
  if [ $rc -eq 2 ] && [ "$(wc -l <"$work/stderr")" -eq 1 ]; then
    ok "mlp_reference.py $args -> $(cat "$work/stderr")"
  else
    fail "mlp_reference.py $args: exit $rc"; cat "$work/stderr"
  fi
done

finish
