#!/usr/bin/env bash
# scripts/run_all_experiments.sh --quick on two tiny problems and the CPU backends (usage:
# test_run_all_experiments.sh path/to/myconv): a run folder with the console log, valid JSON, a
# CSV with core's header and one row per case, one progress line per case, report.md and PNGs;
# bad options (a FIFO as a shape file, a build folder of another source tree too) exit 2 with one
# line and leave no run folder; a failed configure or build stops the run with the log's tail.
set -u
myconv=$(realpath "$1")
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
export MYCONV_BIN=$myconv  # no set-up, no build: this binary

cat >"$work/tiny.txt" <<'EOF'
# two tiny problems
mb1ic2ih8oc2kh3n"small"
mb1ic2ih10oc4kh3ph1n"padded"
EOF
backends=libtorch_cpu,onednn_cpu

expect_usage_error "unknown option" --frobnicate
expect_usage_error "bad preset" --preset nosuch
expect_usage_error "missing value" --shapes
expect_usage_error "missing shape file" --shapes "$work/nonexistent.txt"
expect_usage_error "bad dtype" --shapes "$work/tiny.txt" --dtypes fp32,fp64
expect_usage_error "--inductor-reference with the op suite" --suite ops --inductor-reference
# The programs' grammar: the documented singular, '_' for '-', "--name=value" alike.
expect_usage_error "bad dtype (documented spelling)" --shapes "$work/tiny.txt" --dtype fp64
expect_usage_error "bad layout ('=' form)" --shapes="$work/tiny.txt" --layout=chwn
expect_usage_error "op option with the conv suite ('_' form)" --ops_file "$work/tiny.txt"
expect_usage_error "bad layout" --shapes "$work/tiny.txt" --layouts chwn
expect_usage_error "bad timeout" --shapes "$work/tiny.txt" --timeout soon
expect_usage_error "unknown backend (myconv's check)" --shapes "$work/tiny.txt" --backends nosuch
expect_usage_error "unknown myconv option after --" --shapes "$work/tiny.txt" -- --frobnicate
expect_usage_error "grid option after --" --shapes "$work/tiny.txt" -- --dtype bf16
# Input files that are no files: refused at once, never opened (a FIFO would block a reader).
mkfifo "$work/fifo"
expect_usage_error "--shapes is a FIFO" --shapes "$work/fifo"
expect_usage_error "--shapes is a folder" --shapes "$work"

# Set-up and build (no MYCONV_BIN). A build folder configured for another source tree is refused
# before anything is made; a configure or build that fails stops the run with exit 1 and the
# log's last lines, the later steps not run. A stand-in cmake on PATH plays the failing step; a
# bundle prefix (MYCONV_PREFIX/usr) skips the package set-up.
unset MYCONV_BIN
mkdir -p "$work/other_build" "$work/fakebin" "$work/prefix/usr" "$work/out_build"
printf 'CMAKE_HOME_DIRECTORY:INTERNAL=/some/other/checkout\n' >"$work/other_build/CMakeCache.txt"
expect_usage_error "build folder of another source tree" --shapes "$work/tiny.txt" \
  --build-dir "$work/other_build"
cat >"$work/fakebin/cmake" <<'EOF'
#!/bin/sh
echo "stand-in cmake $*"
case "$*" in
  *--build*) [ -z "${FAIL_BUILD:-}" ] || { echo "stand-in build failure"; exit 4; } ;;
  *) [ -z "${FAIL_CONFIGURE:-}" ] || { echo "CMake Error: stand-in configure failure"; exit 3; } ;;
esac
EOF
chmod +x "$work/fakebin/cmake"
for step in configure build; do
  rm -rf "${work:?}/out_build"/*
  if [ $step = configure ]; then export FAIL_CONFIGURE=1; else unset FAIL_CONFIGURE; export FAIL_BUILD=1; fi
  MYCONV_PREFIX="$work/prefix" PATH="$work/fakebin:$PATH" "$runner" --shapes "$work/tiny.txt" \
    --build-dir "$work/fresh_build" --output-dir "$work/out_build" >/dev/null 2>"$work/stderr"
  rc=$?
  log=$(ls "$work"/out_build/*/all_experiments.txt 2>/dev/null | head -n 1)
  if [ $rc -eq 1 ] && grep -q "error: $step (cmake.*) failed" "$work/stderr" &&
      grep -q "stand-in $step failure" "$work/stderr" &&
      { [ $step = build ] || ! grep -q "stand-in cmake --build" "${log:-/dev/null}"; }; then
    ok "a failed $step stops the run with the log's tail"
  else
    fail "a failed $step: exit $rc, stderr: $(cat "$work/stderr")"
  fi
done
unset FAIL_BUILD
export MYCONV_BIN=$myconv

# A sweep where one problem cannot fit in memory, with --isolate (one process per problem): its
# program refuses that invocation (exit 2), and the runner records its cases `unsupported` with
# the estimate and the memory there; the others run.
printf 'mb1ic2ih8oc2kh3n"small"\nmb1ic1024ih32768oc1024kh1n"huge"\n' >"$work/mixed.txt"
if "$runner" --quick --isolate --shapes "$work/mixed.txt" --backends onednn_cpu \
    --output-dir "$work/out_mem" >"$work/console_mem" 2>&1 &&
    python3 - "$work"/out_mem/*/results.json <<'PY'; then
import json, os, sys
run = os.path.dirname(sys.argv[1])
assert json.load(open(f"{run}/run.json"))["isolate"] is True
log = open(f"{run}/all_experiments.txt").read().splitlines()
assert [l.count(" --problem ") for l in log if l.startswith("$ ") and " --problem " in l] == [1, 1]
rs = {r["name"]: r for r in json.load(open(sys.argv[1]))["results"]}
assert rs["small"]["status"] == "passed", rs["small"]
huge = rs["huge"]
assert huge["status"] == "unsupported", huge
assert huge["reason"].startswith("does not fit in memory: needs about"), huge["reason"]
assert "of host memory (estimate)" in huge["reason"] and "available" in huge["reason"], huge
assert huge["extra"]["runner"]["myconv_exit"] == 2, huge["extra"]
PY
  ok "--isolate: a problem that cannot fit is recorded unsupported, the rest run"
else
  fail "memory refusal in a sweep"; tail -5 "$work/console_mem"
fi

"$runner" --resume "$work" >/dev/null 2>"$work/stderr"
[ $? -eq 2 ] && [ "$(wc -l <"$work/stderr")" -eq 1 ] && ok "resume of a non-run folder -> $(cat "$work/stderr")" ||
  fail "resume of a non-run folder"

# The quick run.
if "$runner" --quick --shapes "$work/tiny.txt" --backends "$backends" --dtypes fp32,bf16 \
    --trust-check --inductor-reference --trace --output-dir "$work/out" >"$work/console" 2>&1; then
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
[[ "$(basename "$run")" =~ ^[0-9]{8}_[0-9]{6}_.+$ ]] && ok "run folder name $(basename "$run")" ||
  fail "run folder name $(basename "$run")"
# --trust-check in the conv suite (its default): nothing to time on the CPU, said in one line
grep -q "trust check skipped: " "$work/console" && ok "--trust-check taken by the conv suite" ||
  fail "--trust-check's skip not logged in the conv suite"
# --inductor-reference: no GPU conv problem on the CPU, said in the log and in its status file
grep -q "Inductor reference skipped: the run holds no GPU conv case" "$work/console" &&
  grep -q '"status": "skipped"' "$run/inductor_reference/status.json" &&
  ok "--inductor-reference skipped with its reason (log, status.json)" ||
  fail "--inductor-reference's skip not logged or not in inductor_reference/status.json"
for f in all_experiments.txt results.json results.csv; do
  [ -s "$run/$f" ] && ok "$f written" || fail "$f missing or empty"
done
# --trace: every program call wrote its Chrome traces into the run folder
n_traces=$(find "$run/traces" -name '*.json' 2>/dev/null | wc -l)
[ "$n_traces" -gt 0 ] && python3 -c 'import json,sys; [json.load(open(f)) for f in sys.argv[1:]]' "$run"/traces/*.json &&
  ok "--trace: $n_traces Chrome traces in RUN/traces" || fail "--trace: no readable trace in RUN/traces"

# JSON, CSV and progress lines against myconv's own case list and CSV header.
"$myconv" --list-cases --shapes "$work/tiny.txt" --backend "$backends" --dtype fp32,bf16 \
  >"$work/cases.jsonl"
"$myconv" --problem mb1ic2ih8oc2kh3 --backend libtorch_cpu --warmup 0 --min-time-ms 0 \
  --max-time-ms 5 --max-iters 3 --csv "$work/direct.csv" >/dev/null
if python3 - "$run" "$work/cases.jsonl" "$work/direct.csv" "$work/console" <<'PY'; then
import csv, json, re, sys
run, cases_path, direct_csv, console = sys.argv[1:]
cases = [json.loads(l) for l in open(cases_path) if l.startswith("{")]
key = lambda r: (r["problem"], r["name"], r["backend"])
assert len(cases) == 8, f"{len(cases)} cases listed, expected 2 problems x 2 dtypes x 2 backends"
doc = json.load(open(f"{run}/results.json"))
assert doc["schema_version"] == 2 and doc["system"]["host"], "top level"
res = doc["results"]
assert [key(r) for r in res] == [key(c) for c in cases], "results = the listed cases, in order"
assert doc["run"]["complete"] and doc["run"]["recorded"] == 8, doc["run"]
for r in res:
    for k in ("suite", "backend", "device", "problem", "name", "dtype", "status", "reason",
              "total_time_ms", "correctness", "params", "command"):
        assert k in r, k
    # Every backend claims fp32. bf16 may be unsupported on this CPU (oneDNN without AVX-512),
    # with the reason, or incorrect only through a library defect the backend names
    # (see tests/conv/test_backends_cpu.cpp).
    known = isinstance(r.get("extra"), dict) and "known_issue" in r["extra"]
    allowed = r["status"] in ("passed", "skipped") or (
        r["dtype"] != "fp32" and (
            (r["status"] == "unsupported" and r["reason"]) or
            (r["status"] == "incorrect" and known and "(known issue: " in r["reason"])))
    assert allowed, (key(r), r["status"], r["reason"])
    if r["status"] == "passed":
        assert r["total_time_ms"]["median"] > 0 and r["correctness"]["passed"], key(r)
assert any(r["status"] == "passed" for r in res), "no backend passed"
assert {r["dtype"] for r in res} == {"fp32", "bf16"}
header = next(csv.reader(open(direct_csv)))
with open(f"{run}/results.csv", newline="") as f:
    reader = csv.reader(f)
    got_header = next(reader)
    rows = list(reader)
assert got_header == header, "CSV header differs from myconv --csv"
assert len(rows) == len(res), f"{len(rows)} CSV rows for {len(res)} results"
col = {c: i for i, c in enumerate(header)}
for row, r in zip(rows, res):
    assert (row[col["problem"]], row[col["name"]], row[col["backend"]]) == key(r)
    assert row[col["status"]] == r["status"]
text = open(console).read()
log = open(f"{run}/all_experiments.txt").read()
assert "\r" not in text and "\r" not in log, "carriage return in the output"
pat = re.compile(r"^\[(\d+)/(\d+)\] elapsed \d\d:\d\d:\d\d eta (\d\d:\d\d:\d\d|--:--:--) (\S+) (\S+): (\w+)", re.M)
prog = pat.findall(text)
assert [int(p[0]) for p in prog] == list(range(1, 9)) and all(p[1] == "8" for p in prog), prog
assert [(p[3], p[4]) for p in prog] == [(c["problem"], c["backend"]) for c in cases], "progress order"
assert pat.findall(log) == prog, "progress lines in the log"
assert "numeric check" in log, "myconv's output is in the log"
assert "numeric check" not in text, "myconv's output stays out of the console"
print("ok: JSON (8 cases in order), CSV (core's header, 8 rows), 8 progress lines")
PY
  passes=$((passes + 1))
else
  fail "run folder contract"
fi

# Report and plots (scripts/analyze_results.py).
if [ -f "$root/scripts/analyze_results.py" ]; then
  if [ -s "$run/report.md" ] && ls "$run"/plots/*.png >/dev/null 2>&1; then
    empty=$(find "$run/plots" -name '*.png' -empty | wc -l)
    [ "$empty" -eq 0 ] && ok "report.md and $(ls "$run"/plots/*.png | wc -l) non-empty plots" ||
      fail "$empty empty PNG files"
  else
    fail "no report.md or plots/*.png"; tail -5 "$run/all_experiments.txt"
  fi
else
  echo "skip: report check (scripts/analyze_results.py is not there yet)"
fi

# --resume of a finished run runs nothing and leaves the same results.
cp "$run/results.json" "$work/before.json"
if "$runner" --resume "$run" >"$work/console2" 2>&1 && grep -q "8 recorded" "$work/console2" &&
    ! grep -q '^\[[0-9]' "$work/console2" &&
    python3 -c 'import json,sys; a,b=(json.load(open(p))["results"] for p in sys.argv[1:]); assert a==b' \
      "$work/before.json" "$run/results.json"; then
  ok "resume of a finished run is a no-op"
else
  fail "resume of a finished run"; cat "$work/console2"
fi

finish
