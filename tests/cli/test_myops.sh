#!/usr/bin/env bash
# The command-line contract of myops (usage: test_myops.sh path/to/myops): bad input -> one
# line on stderr, exit code 2, no output file; good input -> exit 0, valid JSON with the measured
# limits and the scores, a Markdown table; the shipped size classes list and run on the CPU.
set -u
myops=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
quick=(--warmup 0 --min-time-ms 0 --max-time-ms 5 --max-iters 3 --no-peaks)

# expect_usage_error DESCRIPTION WORD_IN_MESSAGE ARGS...
expect_usage_error() {
  local what=$1 word=$2
  shift 2
  rm -f "$work/out.json" "$work/out.csv" "$work/out.md"
  "$myops" "$@" --json "$work/out.json" --csv "$work/out.csv" --markdown "$work/out.md" \
    >"$work/stdout" 2>"$work/stderr"
  local rc=$?
  local lines
  lines=$(wc -l <"$work/stderr")
  if [ "$rc" -ne 2 ]; then fail "$what: exit code $rc, expected 2"; return; fi
  if [ "$lines" -ne 1 ]; then fail "$what: $lines lines on stderr, expected 1"; cat "$work/stderr"; return; fi
  if ! grep -qi -- "$word" "$work/stderr"; then fail "$what: message lacks '$word': $(cat "$work/stderr")"; return; fi
  if [ -e "$work/out.json" ] || [ -e "$work/out.csv" ] || [ -e "$work/out.md" ]; then
    fail "$what: wrote an output file"; return
  fi
  passes=$((passes + 1))
  echo "ok: $what -> $(cat "$work/stderr")"
}

expect_usage_error "unknown size class" "unknown size class" --size huge
expect_usage_error "unknown category" "category" --category conv
expect_usage_error "unknown op" "unknown op" --op gemm
expect_usage_error "unknown backend" "allowed:" --backend nosuch
expect_usage_error "unknown dtype" "fp32, tf32, fp16, bf16" --dtype fp64
expect_usage_error "malformed descriptor" "malformed op descriptor" --problem add:4x
expect_usage_error "bad broadcast" "broadcast" --problem add:4x4+3x4
expect_usage_error "tf32 on an elementwise op" "tf32" --problem relu:64:tf32
expect_usage_error "missing op list" "cannot read" --ops-file "$work/nonexistent.txt"
expect_usage_error "op list that is a folder" "is a folder" --ops-file "$work"
expect_usage_error "size and problem together" "one or the other" --size small --problem relu:64
expect_usage_error "filters leave nothing" "no op problem" --category matmul --op add
expect_usage_error "unknown timing mode" "timing" --timing fastest
expect_usage_error "bad variant" "variant" --variant x1 --problem relu:64
expect_usage_error "unknown option" "--foo" --foo
expect_usage_error "min time above max time" "min-time-ms" --min-time-ms 10 --max-time-ms 5
MYCONV_MEMORY_LIMIT_BYTES=1073741824 expect_usage_error "problem larger than memory" \
  "does not fit in memory: needs about" --problem add:65536x65536x16
"$myops" "${quick[@]}" --json "$work/no/such/dir/out.json" >/dev/null 2>"$work/stderr"
rc=$?
if [ $rc -eq 2 ] && [ "$(wc -l <"$work/stderr")" -eq 1 ]; then passes=$((passes + 1)); else fail "--json in missing folder: rc $rc"; fi

for flag in --help --version --list-backends --list-ops; do
  if "$myops" $flag >"$work/stdout" 2>&1 && [ -s "$work/stdout" ]; then passes=$((passes + 1)); else fail "$flag"; fi
done

# LibTorch is loaded only by a LibTorch case (tests/cli/libtorch_loads.sh).
source "$(dirname "${BASH_SOURCE[0]}")/libtorch_loads.sh"
if libtorch_cpu_built "$myops"; then
  expect_libtorch "$(list_backends_libtorch "$myops")" "--list-backends" "$myops" --list-backends
  expect_libtorch no "--list-ops" "$myops" --list-ops
  expect_libtorch no "a bad command line" "$myops" --backend nosuch
  expect_libtorch no "--list-cases of libtorch_cpu" "$myops" --size small --backend libtorch_cpu \
    --list-cases
  expect_libtorch no "a case of onednn_cpu" "$myops" "${quick[@]}" --op relu --size small \
    --backend onednn_cpu
  expect_libtorch yes "a case of libtorch_cpu" "$myops" "${quick[@]}" --op relu --size small \
    --backend libtorch_cpu
fi

# --list-cases: one JSON identity per (problem, timing mode, backend), suite ops.
if "$myops" --size small --category element --backend libtorch_cpu --timing both --list-cases \
    >"$work/cases" 2>"$work/stderr" &&
    python3 - "$work/cases" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines and all(r["suite"] == "ops" and r["backend"] == "libtorch_cpu" for r in lines)
commands = [r["command"] for r in lines]
assert sum("--timing pure" in c for c in commands) * 2 == len(commands), commands[:4]
assert not any("--timing both" in c for c in commands)
PY
then passes=$((passes + 1)); else fail "--list-cases"; cat "$work/stderr"; fi

# A good run on the CPU backends: JSON with the measured host bandwidth and the scores, CSV and
# Markdown. (The peaks are measured here: no --no-peaks.)
if "$myops" --problem add:512x512+1x512 --problem sum:64x96:axis=1 --problem transpose:33x65 \
    --problem matmul:m40n24k16 --warmup 0 --min-time-ms 0 --max-time-ms 5 --max-iters 3 \
    --timing both --json "$work/good.json" --csv "$work/good.csv" --markdown "$work/good.md" \
    >"$work/stdout" 2>&1; then
  if python3 - "$work/good.json" "$work/good.csv" "$work/good.md" <<'PY'
import csv, json, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema_version"] == 2
bw = doc["system"]["bandwidth"]["cpu"]
assert bw["measured_copy_gbs"] > 0 and bw["threads"] >= 1, bw
results = doc["results"]
assert results and all(r["suite"] == "ops" for r in results)
modes = {r["timing_mode"].split(":")[0] for r in results if r["status"] == "passed"}
assert modes == {"real", "pure"}, modes
for r in results:
    # GPU backends are skipped, with the reason, where no GPU is present.
    allowed = ("passed", "unsupported") + (("skipped",) if r["device"] == "cuda" else ())
    assert r["status"] in allowed, (r["backend"], r["problem"], r["status"], r["reason"])
    assert r["status"] == "passed" or r["reason"], r
    if r["status"] != "passed":
        continue
    m = r["metrics"]
    assert m["bandwidth_gbs"] > 0 and 0 < m["bandwidth_efficiency"], m
    # The reference is PyTorch on the case's own device (libtorch_cuda for the GPU backends).
    reference = "libtorch_" + r["device"]
    if r["backend"] != reference:
        assert m["reference_backend"] == reference and m["speedup_vs_pytorch"] > 0, m
        assert m["score_band"] in ("excellent", "good", "fair", "poor", "critical")
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == len(results)
md = open(sys.argv[3]).read()
assert md.count("\n| `") == len(results), md
PY
  then passes=$((passes + 1)); else fail "good run: JSON/CSV/Markdown contract"; fi
else
  fail "good run exited non-zero"; cat "$work/stdout"
fi

# Every shipped size class lists (the files are found beside the build), each in one call.
if "$myops" --size small,medium,large,xlarge,batched --backend libtorch_cpu --list-cases \
    >"$work/cases" 2>"$work/stderr" &&
    python3 - "$work/cases" <<'PY'
import json, sys
problems = [json.loads(l)["problem"] for l in open(sys.argv[1])]
for marker in ("512x512", "2048x2048", "4096x4096", "8192x8192", "4x512x896"):
    assert any(marker in p for p in problems), marker
PY
then passes=$((passes + 1)); else fail "--size (every class) --list-cases"; cat "$work/stderr"; fi

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
