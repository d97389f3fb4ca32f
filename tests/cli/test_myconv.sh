#!/usr/bin/env bash
# The command-line contract of myconv (usage: test_myconv.sh path/to/myconv):
# bad input -> one line on stderr, exit code 2, no output file; good input -> exit 0 and valid JSON.
set -u
myconv=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
quick=(--warmup 0 --min-time-ms 0 --max-time-ms 5 --max-iters 3)

# expect_usage_error DESCRIPTION WORD_IN_MESSAGE ARGS...
expect_usage_error() {
  local what=$1 word=$2
  shift 2
  rm -f "$work/out.json" "$work/out.csv"
  "$myconv" "$@" --json "$work/out.json" --csv "$work/out.csv" >"$work/stdout" 2>"$work/stderr"
  local rc=$?
  local lines
  lines=$(wc -l <"$work/stderr")
  if [ "$rc" -ne 2 ]; then fail "$what: exit code $rc, expected 2"; return; fi
  if [ "$lines" -ne 1 ]; then fail "$what: $lines lines on stderr, expected 1"; cat "$work/stderr"; return; fi
  if ! grep -qi -- "$word" "$work/stderr"; then fail "$what: message lacks '$word': $(cat "$work/stderr")"; return; fi
  if [ -e "$work/out.json" ] || [ -e "$work/out.csv" ]; then fail "$what: wrote an output file"; return; fi
  passes=$((passes + 1))
  echo "ok: $what -> $(cat "$work/stderr")"
}

expect_usage_error "kernel larger than input" "larger than the padded input" --input_size 4 --kernel_size 5
expect_usage_error "zero size" "input height" --input_size 0
expect_usage_error "negative batch" "batch-size" --batch_size -1
expect_usage_error "channels not divisible by groups" "divisible by groups" --in_channels 6 --groups 4
expect_usage_error "unknown backend" "allowed:" --backend nosuch
expect_usage_error "unknown dtype" "fp32, tf32, fp16, bf16" --dtype fp64
expect_usage_error "unknown layout" "nchw, nhwc" --layout chwn
expect_usage_error "malformed descriptor" "malformed problem descriptor" --problem mb2ic4ihXoc8kh5
expect_usage_error "missing shape file" "cannot read" --shapes "$work/nonexistent.txt"
expect_usage_error "unknown option" "--foo" --foo
expect_usage_error "non-numeric size" "input-size" --input_size abc
expect_usage_error "descriptor and dimensions together" "one or the other" --problem mb2ic4ih64oc8kh5 --input_size 32
expect_usage_error "bad halide schedule" "halide-schedule" --halide-schedule fast
expect_usage_error "bad halide tile preset" "halide-tile" --halide-tile c999
expect_usage_error "min time above max time" "min-time-ms" --min-time-ms 10 --max-time-ms 5

# A problem whose host tensors exceed the memory there (a host of 1 GiB available:
# MYCONV_MEMORY_LIMIT_BYTES): the estimate and the memory named, exit 2.
MYCONV_MEMORY_LIMIT_BYTES=1073741824 expect_usage_error "problem larger than memory" \
  "does not fit in memory: needs about" --problem mb7ic1024ih512oc1024kh1

# --json into a folder that does not exist fails before running anything.
"$myconv" "${quick[@]}" --json "$work/no/such/dir/out.json" >/dev/null 2>"$work/stderr"
rc=$?
if [ $rc -eq 2 ] && [ "$(wc -l <"$work/stderr")" -eq 1 ]; then passes=$((passes + 1)); else fail "--json in missing folder: rc $rc"; fi

# LibTorch is loaded only by a LibTorch case (tests/cli/libtorch_loads.sh).
source "$(dirname "${BASH_SOURCE[0]}")/libtorch_loads.sh"
if libtorch_cpu_built "$myconv"; then
  expect_libtorch "$(list_backends_libtorch "$myconv")" "--list-backends" "$myconv" --list-backends
  expect_libtorch no "a bad command line" "$myconv" --input_size 0
  expect_libtorch no "--list-cases of libtorch_cpu" "$myconv" --backend libtorch_cpu --list-cases
  expect_libtorch no "a case of onednn_cpu and halide_cpu" "$myconv" "${quick[@]}" \
    --input-size 8 --backend onednn_cpu,halide_cpu
  expect_libtorch yes "a case of libtorch_cpu" "$myconv" "${quick[@]}" --input-size 8 \
    --backend libtorch_cpu
fi

# Help, version and the backend list exit 0.
for flag in --help --version --list-backends; do
  if "$myconv" $flag >"$work/stdout" 2>&1 && [ -s "$work/stdout" ]; then passes=$((passes + 1)); else fail "$flag"; fi
done

# A good run: exit 0, JSON with the minimum contract, CSV with a header and one line per result.
if "$myconv" --input_size 16 --kernel_size 3 "${quick[@]}" --json "$work/good.json" --csv "$work/good.csv" \
    --save-tensors "$work/npy" >"$work/stdout" 2>&1; then
  if python3 - "$work/good.json" "$work/good.csv" <<'PY'
import csv, json, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema_version"] == 2 and "system" in doc and doc["results"], "top level"
for r in doc["results"]:
    for k in ("suite", "backend", "device", "problem", "dtype", "status", "reason",
              "compile_time_ms", "cpu_time_ms", "gpu_time_ms", "total_time_ms", "correctness"):
        assert k in r, k
    assert r["status"] in ("passed", "skipped", "unsupported", "incorrect", "failed")
    if r["status"] == "passed":
        for k in ("median", "min", "mean", "cv", "samples"):
            assert k in r["total_time_ms"] and k in r["cpu_time_ms"], k
        assert r["total_time_ms"]["median"] > 0
        c = r["correctness"]
        assert c["passed"] and {"max_abs_err", "rel_l2_err", "tolerance"} <= c.keys()
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == len(doc["results"]), "csv rows"
# Every CPU backend built into this binary passes the default problem with real times, and the
# ones that compile (oneDNN primitives, Halide JIT) report a compile time.
by_name = {r["backend"]: r for r in doc["results"]}
for name in ("libtorch_cpu", "onednn_cpu", "halide_cpu"):
    r = by_name.get(name)
    if r is None:  # not built into this binary, so not run by default
        continue
    assert r["status"] == "passed", (name, r["status"], r["reason"])
    assert r["cpu_time_ms"]["median"] > 0 and r["total_time_ms"]["median"] > 0, name
    if name != "libtorch_cpu":
        assert r["compile_time_ms"] > 0, name
PY
  then passes=$((passes + 1)); else fail "good run: JSON/CSV contract"; fi
  if ls "$work/npy"/*/src.npy "$work/npy"/*/ref.npy >/dev/null 2>&1; then passes=$((passes + 1)); else fail "--save-tensors wrote no .npy"; fi
else
  fail "good run exited non-zero"; cat "$work/stdout"
fi

# An unsupported dtype on the CPU backends is a status, not an error: exit 0, and --strict too.
if "$myconv" --input_size 16 --kernel_size 3 --dtype tf32 "${quick[@]}" --strict >"$work/stdout" 2>&1 &&
    grep -q unsupported "$work/stdout"; then passes=$((passes + 1)); else fail "tf32 should be reported unsupported with exit 0"; fi

# --debug and --trace-dir on a CPU backend: the [DEBUG] block after the result block, and one
# Chrome trace JSON (Perfetto's format) with the phases, the traced calls and the metadata.
if ! "$myconv" --input_size 16 --kernel_size 3 --backend libtorch_cpu "${quick[@]}" --debug \
    --trace-dir "$work/trace" >"$work/stdout" 2>&1; then
  fail "--debug --trace-dir run exited non-zero"; cat "$work/stdout"
elif grep -q "status        skipped" "$work/stdout"; then
  echo "skip: --debug --trace-dir (libtorch_cpu is not built into this binary)"
elif grep -q "\[DEBUG\] Total events: [1-9]" "$work/stdout" &&
    grep -q "\[DEBUG\] CUDA events with time > 0: 0" "$work/stdout" &&
    grep -q "\[DEBUG\] CPU events with time > 0: [1-9]" "$work/stdout" &&
    grep -q "\[DEBUG\] GPU activity: not recorded" "$work/stdout" &&
    python3 - "$work/trace" <<'PY'
import glob, json, sys
files = glob.glob(sys.argv[1] + "/*.json")
assert [f.rsplit("/", 1)[1] for f in files] == ["libtorch_cpu.mb2ic4ih16oc8kh3.json"], files
doc = json.load(open(files[0]))
events = doc["traceEvents"]
complete = [e for e in events if e["ph"] == "X"]
for e in complete:
    for k in ("ph", "ts", "dur", "name", "pid", "tid"):
        assert k in e, (k, e)
    assert e["ts"] >= 0 and e["dur"] >= 0, e
names = {e["name"] for e in complete}
for phase in ("prepare", "compile", "first run and check", "warm-up and sampling", "traced calls",
              "call 3", "run", "sync"):
    assert phase in names, (phase, names)
meta = {e["name"] for e in events if e["ph"] == "M"}
assert {"process_name", "thread_name", "process_labels"} <= meta, meta
other = doc["otherData"]
assert other["backend"] == "libtorch_cpu" and other["problem"] == "mb2ic4ih16oc8kh3", other
assert other["algorithm"] and other["traced_calls"] == 3, other
PY
then
  passes=$((passes + 1))
  # The file passes the Trace Event Format checker; a copy with a broken flow event must not.
  checker="$(dirname "$0")/../../scripts/checks/check_chrome_trace.py"
  trace=$(ls "$work"/trace/*.json)
  python3 - "$trace" "$work/broken.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["traceEvents"].append({"ph": "f", "cat": "launch", "name": "launch", "id": 999, "pid": 1,
                           "tid": 1, "ts": 1.0})
json.dump(doc, open(sys.argv[2], "w"))
PY
  if python3 "$checker" "$trace" >/dev/null && ! python3 "$checker" "$work/broken.json" >/dev/null; then
    passes=$((passes + 1))
  else
    fail "scripts/checks/check_chrome_trace.py: the trace should pass and the broken copy fail"
  fi
else
  fail "--debug --trace-dir: debug block or trace JSON"; cat "$work/stdout"
fi

# A shape file in benchdnn's grammar, as its inputs/conv files are written: every problem token
# is accounted for (a case per distinct problem and backend, a note per option and per repeat),
# a dilated line has benchdnn's output size, and 3D and asymmetric lines run as unsupported.
cat >"$work/benchdnn_shapes" <<'EOF'
# shapes in benchdnn's own words
--dir=FWD_B
g1mb2ic3ih32iw32oc8oh16ow16kh7kw7sh2sw2ph3pw3n"net:conv1*2"
mb2_ic3oc4_ih17oh6kh5sh2ph1dh1_n"dilated_conv:18"
mb2ic4ih8oc6oh5kh3ph1dh1n"dilated_conv:2"
mb2ic4id5ih6iw7oc8kd3kh3kw3n"conv3d"
g2_ic8oc8_iw16kw3_n"1d"
mb2ic4ih8oc4kh3 mb2ic4ih8oc4kh3
EOF
if "$myconv" --shapes "$work/benchdnn_shapes" --backend libtorch_cpu --list-cases \
    >"$work/stdout" 2>"$work/stderr" &&
    python3 - "$work/stdout" "$work/stderr" "$work/benchdnn_shapes" <<'PY'
import json, sys
cases = [json.loads(l) for l in open(sys.argv[1])]
notes = open(sys.argv[2]).read().splitlines()
path = sys.argv[3]
problems = [c["problem"] for c in cases]
assert problems == ["mb2ic3ih32oc8kh7sh2ph3", "mb2ic3ih17oc4kh5sh2ph1dh1", "mb2ic4ih8oc6oh5kh3ph1dh1",
                    "mb2ic4id5ih6iw7oc8kd3kh3kw3", "g2mb2ic8ih1iw16oc8kh1kw3", "mb2ic4ih8oc4kh3"], problems
assert cases[0]["name"] == "net:conv1*2" and cases[0]["params"]["oh"] == 16, cases[0]
# benchdnn's output size: (17 - ((5 - 1) * (1 + 1) + 1) + 2 * 1) / 2 + 1 = 6
assert cases[1]["params"]["oh"] == 6 and cases[1]["params"]["dilation_h"] == 2, cases[1]
assert notes == [f"myconv: note: {path}:2: benchdnn option '--dir=FWD_B' is not supported; ignored",
                 f"myconv: note: {path}:8: the same problem as {path}:8; run once"], notes
PY
then passes=$((passes + 1)); else fail "benchdnn shape file --list-cases"; cat "$work/stdout" "$work/stderr"; fi
# Running them: the 3D and the asymmetric line are unsupported with their reason, the others pass.
if "$myconv" --shapes "$work/benchdnn_shapes" --backend libtorch_cpu "${quick[@]}" \
    --json "$work/benchdnn.json" >"$work/stdout" 2>"$work/stderr" &&
    python3 - "$work/benchdnn.json" <<'PY'
import json, sys
rs = {r["name"] or r["problem"]: r for r in json.load(open(sys.argv[1]))["results"]}
assert rs["conv3d"]["status"] == "unsupported" and "3D" in rs["conv3d"]["reason"], rs["conv3d"]
asym = rs["dilated_conv:2"]
assert asym["status"] == "unsupported" and "asymmetric padding" in asym["reason"], asym
assert asym["params"]["ph_r"] == 0, asym["params"]
for name in ("net:conv1*2", "dilated_conv:18", "1d", "mb2ic4ih8oc4kh3"):
    assert rs[name]["status"] in ("passed", "skipped"), rs[name]  # skipped: not built here
PY
then passes=$((passes + 1)); else fail "benchdnn shape file run"; cat "$work/stdout" "$work/stderr"; fi
# An option line alone, a bad line: the error names the file and line.
printf 'mb2ic4ih8oc4kh3\nmb2ic4ih8oc4kh3sw2\n' >"$work/bad_shapes"
expect_usage_error "benchdnn line missing its width fields" "bad_shapes:2" --shapes "$work/bad_shapes"
# The version-1 -> 2 descriptor upgrade of scripts/results/results_schema.py writes what myconv writes.
for v1 in mb2ic3ih13oc5kh3sw2ph1 g4mb1ic8ih13oc8kh3ph1dh2 g2mb3ic6ih13iw11oc4kh3kw2sh2sw1ph2pw1dh2dw3 \
    mb2ic4ih13iw17oc8kh1kw7pw3 mb1ic3ih31oc6kh5sh2ph4dh2dtbf16nhwc; do
  v2=$(python3 -c "import sys; sys.path.insert(0, sys.argv[1]); import results_schema as r; print(r.v1_to_v2_descriptor(sys.argv[2]))" \
    "$(dirname "$0")/../../scripts/results" "$v1")
  got=$("$myconv" --problem "$v2" --backend libtorch_cpu --list-cases 2>&1 |
    python3 -c "import json, sys; print(json.loads(sys.stdin.readline())['problem'])" 2>&1)
  if [ "$got" = "$v2" ]; then passes=$((passes + 1)); else fail "upgrade of $v1: '$v2', myconv writes '$got'"; fi
done

# --timing both: every case in real and then in pure mode, one record each; each case's command
# names its own mode (none for real), and the listed cases are those run.
if "$myconv" --input_size 8 --kernel_size 3 --backend libtorch_cpu --timing both --seed 3 \
    --list-cases >"$work/both.jsonl" 2>"$work/stderr" &&
    "$myconv" --input_size 8 --kernel_size 3 --backend libtorch_cpu --timing both --seed 3 \
      "${quick[@]}" --json "$work/both.json" >"$work/stdout" 2>"$work/stderr" &&
    grep -q "1 problem(s) x 1 backend(s) x 2 timing modes" "$work/stdout" &&
    python3 - "$work/both.jsonl" "$work/both.json" <<'PY'
import json, sys
listed = [json.loads(l)["command"] for l in open(sys.argv[1])]
rs = json.load(open(sys.argv[2]))["results"]
assert [r["command"] for r in rs] == listed, (listed, [r["command"] for r in rs])
assert listed == ["myconv --seed 3 --problem mb2ic4ih8oc8kh3 --backend libtorch_cpu",
                  "myconv --seed 3 --timing pure --problem mb2ic4ih8oc8kh3 --backend libtorch_cpu"], listed
assert [r["timing_mode"].split(":")[0] for r in rs] == ["real", "pure"], [r["timing_mode"] for r in rs]
assert all(r["status"] == "passed" for r in rs), [(r["status"], r["reason"]) for r in rs]
PY
then passes=$((passes + 1)); else fail "--timing both"; cat "$work/stdout" "$work/stderr"; fi

# The source record: --source-info is system.source; a build from a tree that differed from its
# commit writes the difference beside --json and names it, a clean one writes none.
mkdir -p "$work/src"
if "$myconv" --source-info >"$work/source.json" && "$myconv" --write-source-diff "$work/w.diff" &&
    "$myconv" --input_size 8 --kernel_size 3 --backend libtorch_cpu "${quick[@]}" \
      --json "$work/src/out.json" >/dev/null 2>&1 &&
    python3 - "$work" <<'PY'
import hashlib, json, os, sys
work = sys.argv[1]
info = json.load(open(f"{work}/source.json"))
doc = json.load(open(f"{work}/src/out.json"))
src = doc["system"]["source"]
for k in ("commit", "commit_short", "dirty", "origin", "diff_sha256", "diff_bytes"):
    assert src[k] == info[k], (k, src[k], info[k])
assert doc["system"]["git_commit"] == info["commit_short"]
written = open(f"{work}/w.diff", "rb").read()
assert len(written) == info["diff_bytes"], (len(written), info["diff_bytes"])
if info["diff_bytes"]:
    assert info["dirty"] and hashlib.sha256(written).hexdigest() == info["diff_sha256"]
    assert src["diff_file"] == "out.source.diff", src
    assert open(f"{work}/src/out.source.diff", "rb").read() == written
else:
    assert src["diff_file"] is None and not os.path.exists(f"{work}/src/out.source.diff"), src
print("source:", info["commit_short"], info["origin"], info["diff_bytes"], "bytes of difference")
PY
then passes=$((passes + 1)); else fail "--source-info, --write-source-diff, the difference beside --json"; fi

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
