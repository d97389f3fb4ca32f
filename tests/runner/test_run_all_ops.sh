#!/usr/bin/env bash
# scripts/run_all_experiments.sh --suite ops --quick on a tiny op list and the CPU backends (usage:
# test_run_all_ops.sh path/to/myops [path/to/myconv]): a run folder <stamp>_<host>_ops with valid
# JSON of suite "ops" (the listed cases in order, the limits measured once in system.bandwidth),
# a CSV row per case, one progress line per case, the op report (report.md, plots); a resume of
# the finished run runs and measures nothing; bad options exit 2 with one line and leave no run
# folder. With myconv too: --suite all makes one run folder per suite, and an option one suite
# rejects stops both before any case runs.
set -u
myops=$(realpath "$1")
myconv=${2:+$(realpath "$2")}
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
export MYOPS_BIN=$myops  # no set-up, no build: these binaries
[ -z "$myconv" ] || export MYCONV_BIN=$myconv

cat >"$work/tiny_ops.txt" <<'EOF'
# a tiny op list: one op of four categories
add:64x64
softmax:32x64
transpose:64x128
matmul:m32n32k32
EOF
backends=libtorch_cpu,onednn_cpu

expect_usage_error "unknown suite" --suite nosuch
expect_usage_error "conv option with --suite ops" --suite ops --preset seed
expect_usage_error "op option with the conv suite" --sizes small
expect_usage_error "sizes and an op list" --suite ops --sizes small --ops-file "$work/tiny_ops.txt"
expect_usage_error "bad size class" --suite ops --sizes huge
expect_usage_error "bad category" --suite ops --categories fft
expect_usage_error "missing op list" --suite ops --ops-file "$work/nonexistent.txt"
expect_usage_error "unknown op (myops' check)" --suite ops --ops-file "$work/tiny_ops.txt" --ops fft
expect_usage_error "unknown backend (myops' check)" --suite ops --ops-file "$work/tiny_ops.txt" \
  --backends cudnn
expect_usage_error "--timing both after --" --suite ops --ops-file "$work/tiny_ops.txt" -- \
  --timing both
expect_usage_error "--no-peaks after --" --suite ops --ops-file "$work/tiny_ops.txt" -- --no-peaks
expect_usage_error "--trust-check with the mlp suite" --suite mlp --trust-check

# The quick run.
if "$runner" --suite ops --quick --ops-file "$work/tiny_ops.txt" --backends "$backends" \
    --trust-check --output-dir "$work/out" >"$work/console" 2>&1; then
  ok "quick run exited 0"
else
  fail "quick run exited non-zero"
  cat "$work/console"
fi
runs=("$work/out"/*/)
if [ ${#runs[@]} -ne 1 ] || [ ! -d "${runs[0]}" ]; then
  fail "expected one run folder, got: $(ls "$work/out")"
  finish
  exit 1
fi
run=${runs[0]%/}
[[ "$(basename "$run")" =~ ^[0-9]{8}_[0-9]{6}_.+_ops$ ]] && ok "run folder name $(basename "$run")" ||
  fail "run folder name $(basename "$run")"
for f in all_experiments.txt results.json results.csv limits.json report.md; do
  [ -s "$run/$f" ] && ok "$f written" || fail "$f missing or empty"
done
# --trust-check on CPU backends: nothing to time (no libtorch_cuda case), said in one line
grep -q "trust check skipped: .*no passed libtorch_cuda" "$work/console" &&
  ok "--trust-check skipped with its reason" || fail "--trust-check's skip not logged"
[ ! -e "$run/trust.json" ] && ok "no trust.json without a check" || fail "trust.json written"

"$myops" --list-cases --ops-file "$work/tiny_ops.txt" --backend "$backends" --dtype fp32 \
  >"$work/cases.jsonl"
if python3 - "$run" "$work/cases.jsonl" "$work/console" <<'PY'; then
import csv, json, re, sys
run, cases_path, console = sys.argv[1:]
cases = [json.loads(l) for l in open(cases_path) if l.startswith("{")]
key = lambda r: (r["problem"], r["name"], r["backend"])
assert len(cases) == 8, f"{len(cases)} cases listed, expected 4 problems x 2 backends"
doc = json.load(open(f"{run}/results.json"))
res = doc["results"]
assert [key(r) for r in res] == [key(c) for c in cases], "results = the listed cases, in order"
assert doc["run"]["suite"] == "ops" and doc["run"]["complete"], doc["run"]
assert "myops_args" in doc["run"] and doc["run"]["limits_file"] == "limits.json", doc["run"]
assert all(r["suite"] == "ops" for r in res), "suite"
assert all(r["status"] == "passed" for r in res), [(key(r), r["status"], r["reason"]) for r in res]
# The limits, measured once, are the system's; every case ran with --no-peaks, the 4 problems in
# one myops process.
cpu = doc["system"]["bandwidth"]["cpu"]
assert cpu["measured_copy_gbs"] > 0, cpu
assert cpu == json.load(open(f"{run}/limits.json"))["system"]["bandwidth"]["cpu"]
log = open(f"{run}/all_experiments.txt").read()
invocations = [l for l in log.splitlines() if l.startswith("$ ") and "--problem" in l
               and "limits.json" not in l]
assert [l.count(" --problem ") for l in invocations] == [4], invocations
assert all("--no-peaks" in l for l in invocations), invocations
assert log.count("measuring the machine's limits once") == 1
with open(f"{run}/results.csv", newline="") as f:
    rows = list(csv.DictReader(f))
assert [(r["problem"], r["name"], r["backend"]) for r in rows] == [key(c) for c in cases], "CSV"
text = open(console).read()
pat = re.compile(r"^\[(\d+)/8\] elapsed \S+ eta \S+ (\S+) (\S+): passed", re.M)
assert [(p[1], p[2]) for p in pat.findall(text)] == [(c["problem"], c["backend"]) for c in cases]
report = open(f"{run}/report.md").read()
assert report.startswith("# myops results report\n"), report[:80]
for section in ("## System and measured limits", "## Summary per backend", "## Targets",
                "## Suggestions", "| onednn_cpu | cpu | 4 | 4 |"):
    assert section in report, section
print("ok: JSON (suite ops, 8 cases in order, limits once), CSV, progress, op report")
PY
  passes=$((passes + 1))
else
  fail "run folder contract"
fi
if grep -q "No plots: matplotlib is not importable" "$run/report.md"; then
  echo "skip: plots (matplotlib is not installed)"
else
  for p in efficiency.png speedup_onednn_cpu.png matmul_roofline.png; do
    [ -s "$run/plots/$p" ] && ok "plots/$p" || fail "plots/$p missing or empty"
  done
fi

# --resume of a finished run runs nothing, measures nothing and leaves the same results.
cp "$run/results.json" "$work/before.json"
if "$runner" --resume "$run" >"$work/console2" 2>&1 && grep -q "8 recorded" "$work/console2" &&
    ! grep -q '^\[[0-9]' "$work/console2" && ! grep -q "measuring" "$work/console2" &&
    python3 -c 'import json, sys; a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["results"] == b["results"] and a["system"] == b["system"]' \
      "$work/before.json" "$run/results.json"; then
  ok "resume of a finished run is a no-op"
else
  fail "resume of a finished run"; cat "$work/console2"
fi

# --suite all: a run folder per suite; an option one suite rejects stops both before any case.
if [ -n "$myconv" ]; then
  printf 'mb1ic2ih8oc2kh3n"small"\n' >"$work/tiny_conv.txt"
  mkdir "$work/all"
  if "$runner" --suite all --quick --shapes "$work/tiny_conv.txt" --ops-file "$work/tiny_ops.txt" \
      --backends libtorch_cpu --output-dir "$work/all" >"$work/console3" 2>&1; then
    conv_run=$(ls -d "$work/all"/*_[0-9][0-9][0-9][0-9][0-9][0-9]_* | grep -v '_ops$')
    ops_run=$(ls -d "$work/all"/*_ops)
    if [ "$(ls "$work/all" | wc -l)" -eq 2 ] && python3 - "$conv_run" "$ops_run" <<'PY' &&
import json, sys
for path, suite in zip(sys.argv[1:], ("conv", "ops")):
    doc = json.load(open(path + "/results.json"))
    assert {r["suite"] for r in doc["results"]} == {suite} and doc["run"]["complete"], path
PY
        [ -s "$conv_run/report.md" ] && [ -s "$ops_run/report.md" ]; then
      ok "--suite all: a conv and an ops run folder, each complete with its report"
    else
      fail "--suite all folders: $(ls "$work/all")"; cat "$work/console3"
    fi
  else
    fail "--suite all exited non-zero"; cat "$work/console3"
  fi
  rm -rf "$work/out"/*
  expect_usage_error "--suite all with a backend myops does not know" --suite all --quick \
    --shapes "$work/tiny_conv.txt" --ops-file "$work/tiny_ops.txt" --backends cudnn
fi

finish
