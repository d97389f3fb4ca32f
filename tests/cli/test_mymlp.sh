#!/usr/bin/env bash
# The command-line contract of mymlp (usage: test_mymlp.sh path/to/mymlp): bad input -> one
# line on stderr, exit code 2, no output file; --list-cases of the studies; a good tiny run on the
# CPU -> exit 0, JSON (suite mlp, metrics, the studies block) and CSV; --profile writes the table,
# a trace that parses and the stacks.
set -u
mymlp=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
quick=(--warmup 0 --min-time-ms 0 --max-time-ms 5 --max-iters 3 --no-ceiling --phase-steps 2
  --backend libtorch_eager_cpu)

expect_usage_error() {
  local what=$1 word=$2
  shift 2
  rm -rf "$work/out.json" "$work/out.csv" "$work/prof"
  "$mymlp" "$@" --json "$work/out.json" --csv "$work/out.csv" >"$work/stdout" 2>"$work/stderr"
  local rc=$? lines
  lines=$(wc -l <"$work/stderr")
  if [ "$rc" -ne 2 ]; then fail "$what: exit code $rc, expected 2"; return; fi
  if [ "$lines" -ne 1 ]; then fail "$what: $lines lines on stderr"; cat "$work/stderr"; return; fi
  if ! grep -qi -- "$word" "$work/stderr"; then fail "$what: message lacks '$word': $(cat "$work/stderr")"; return; fi
  if [ -e "$work/out.json" ] || [ -e "$work/out.csv" ] || [ -e "$work/prof" ]; then
    fail "$what: wrote an output file"; return
  fi
  passes=$((passes + 1))
  echo "ok: $what -> $(cat "$work/stderr")"
}

expect_usage_error "zero dim" "dim" --dim 0
expect_usage_error "unknown dtype" "dtype" --dtype fp16
expect_usage_error "unknown backend" "allowed:" --backend nosuch
expect_usage_error "malformed descriptor" "descriptor" --problem mlp:d8
expect_usage_error "unknown scale parameter" "scaling parameter" --scale width
expect_usage_error "bad base" "--base" --scale dim --base dim=x
expect_usage_error "bad profile folder" "--profile" --profile /proc/nonexistent/prof
expect_usage_error "unknown option" "--foo" --foo
expect_usage_error "one trial" "num-trials" --num_trials 1

for flag in --help --version --list-backends; do
  if "$mymlp" $flag >"$work/stdout" 2>&1 && [ -s "$work/stdout" ]; then passes=$((passes + 1)); else fail "$flag"; fi
done

if "$mymlp" --example --scale all --matmul --dtype fp32,bf16 --list-cases >"$work/cases" 2>"$work/stderr" &&
    python3 - "$work/cases" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert all(r["suite"] == "mlp" for r in rows)
names = {r["name"] for r in rows}
assert {"example", "base", "scale_dim_x5", "scale_num_steps_x2"} <= names, names
assert any(r["problem"] == "mm:n16384:bf16" for r in rows)
assert any(r["problem"] == "mlp:d128l16b128s5:fp32" for r in rows)
PY
then passes=$((passes + 1)); else fail "--list-cases"; cat "$work/stderr"; fi

if "$mymlp" "${quick[@]}" --example --dim 16 --num_layers 2 --batch_size 4 --num_steps 2 \
    --scale num_steps --base dim=16,num_layers=2,batch_size=8,num_steps=1 --matmul --matmul-dims 16 \
    --num_warmups 1 --num_trials 3 --profile "$work/prof" \
    --json "$work/good.json" --csv "$work/good.csv" >"$work/stdout" 2>&1; then
  if python3 - "$work/good.json" "$work/good.csv" "$work/prof" "$root/scripts/checks/check_chrome_trace.py" <<'PY'
import csv, glob, json, subprocess, sys
doc = json.load(open(sys.argv[1]))
res = doc["results"]
assert res and all(r["suite"] == "mlp" and r["status"] == "passed" for r in res), \
    [(r["problem"], r["status"], r["reason"]) for r in res]
mlps = [r for r in res if r["params"]["kind"] == "mlp"]
for r in mlps:
    m = r["metrics"]
    assert m["forward_ms"] > 0 and m["backward_ms"] > 0 and m["tflops"] > 0, m
    assert r["total_time_ms"]["samples"] == 3, r["total_time_ms"]  # --num_trials 3
    assert r["extra"]["gradient_check"]["loss_rel_err"] <= r["extra"]["gradient_check"]["tolerance_rel_l2"]
st = doc["studies"]
assert len(st) == 1 and st[0]["parameter"] == "num_steps" and st[0]["points"] == 5, st
assert [r for r in res if r["problem"] == "mm:n16:fp32"]
assert len(list(csv.DictReader(open(sys.argv[2])))) == len(res)
prof = [r for r in mlps if "profile" in r["extra"]]
assert len(prof) == 1 and prof[0]["name"] == "", [r["name"] for r in prof]  # studies not profiled
p = prof[0]["extra"]["profile"]
assert p["top_ops"] and glob.glob(sys.argv[3] + "/*.stacks.txt"), p
subprocess.run([sys.executable, sys.argv[4], p["trace_file"]], check=True)
PY
  then passes=$((passes + 1)); else fail "good run: JSON/CSV/profile contract"; cat "$work/stdout" | tail -30; fi
  grep -q "Self CPU time total" "$work/stdout" && passes=$((passes + 1)) || fail "profile table not printed"
else
  fail "good run exited non-zero"; tail -30 "$work/stdout"
fi

# --timing both: each case in real and then in pure mode; a scaling study per mode, each fitted to
# its own mode's times; the tables gain a timing column.
if "$mymlp" "${quick[@]}" --scale num_steps --base dim=8,num_layers=1,batch_size=4,num_steps=1 \
    --timing both --json "$work/both.json" >"$work/stdout" 2>&1 &&
    grep -q "5 problem(s) x 1 backend(s) x 2 timing modes" "$work/stdout" &&
    python3 - "$work/both.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
res = doc["results"]
assert len(res) == 10 and all(r["status"] == "passed" for r in res), [(r["status"], r["reason"]) for r in res]
modes = [r["timing_mode"].split(":")[0] for r in res]
assert modes == ["real", "pure"] * 5, modes
assert all(("--timing pure" in r["command"]) == (m == "pure") for r, m in zip(res, modes))
st = doc["studies"]
assert sorted(s["timing"] for s in st) == ["pure", "real"] and all(s["points"] == 5 for s in st), st
for s in st:
    own = [r["total_time_ms"]["median"] for r, m in zip(res, modes) if m == s["timing"]]
    assert sorted(s["time_ms"]) == sorted(own), (s, own)
PY
then passes=$((passes + 1)); else fail "--timing both"; tail -30 "$work/stdout"; fi

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
