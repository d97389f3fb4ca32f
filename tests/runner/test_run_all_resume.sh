#!/usr/bin/env bash
# A killed scripts/run_all_experiments.sh leaves valid results of its finished cases, and
# --resume finishes the rest: the same cases as an uninterrupted run, none twice (usage:
# test_run_all_resume.sh path/to/myconv). The run is killed twice: SIGTERM after its first case,
# then SIGKILL during the resumed run; a second --resume completes it. MYCONV_BIN points at a
# wrapper that starts myconv a little late, and every case of the killed runs samples for 1 s,
# so that the kills land in the middle of the run (one myconv process runs all its problems back
# to back).
set -u
myconv=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
runner="$root/scripts/run_all_experiments.sh"
work=$(mktemp -d)
pid=""
cleanup() {
  [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; passes=$((passes + 1)); }

printf '#!/bin/sh\nsleep 1\nexec "%s" "$@"\n' "$myconv" >"$work/slow_myconv"
chmod +x "$work/slow_myconv"
cat >"$work/shapes.txt" <<'EOF'
mb1ic2ih8oc2kh3n"p1"
mb1ic2ih9oc2kh3n"p2"
mb1ic2ih10oc2kh3n"p3"
mb1ic2ih11oc2kh3n"p4"
EOF
grid=(--quick --shapes "$work/shapes.txt" --backends "libtorch_cpu,onednn_cpu")
slow=(-- --min-time-ms 1000 --max-time-ms 1000)  # after the runner's own options

# count RUN [killed]: results recorded in RUN/results.json (validates JSON and CSV on the way: each
# whole, no case twice, the same cases in the same order). After a SIGKILL the two files, each
# written whole (results.json, then results.csv), may be one case apart: the kill can land between
# the two writes; a resume writes both again.
count() {
  python3 - "$@" <<'PY'
import csv, json, sys
doc = json.load(open(f"{sys.argv[1]}/results.json"))
rows = list(csv.DictReader(open(f"{sys.argv[1]}/results.csv", newline="")))
keys = [(r["problem"], r["name"], r["backend"]) for r in doc["results"]]
csv_keys = [(r["problem"], r["name"], r["backend"]) for r in rows]
assert len(set(keys)) == len(keys) and len(set(csv_keys)) == len(csv_keys), "a case twice"
if len(sys.argv) > 2:  # killed: the CSV is the JSON's cases, or all but its last
    assert csv_keys in (keys, keys[:-1]), "CSV rows are not the JSON's cases"
else:
    assert csv_keys == keys, "CSV rows / JSON results"
print(len(keys))
PY
}
# wait_for RUN N: until RUN/results.json holds at least N results (60 s at most).
# A grep, not count: quick to start on a busy machine, so that the kill lands soon after.
wait_for() {
  for _ in $(seq 600); do
    [ "$(grep -c '^      "backend": ' "$1/results.json" 2>/dev/null || echo 0)" -ge "$2" ] &&
      return 0
    sleep 0.1
  done
  return 1
}

# The uninterrupted run: the cases to expect.
MYCONV_BIN=$myconv "$runner" "${grid[@]}" --output-dir "$work/full" >"$work/full.log" 2>&1 ||
  fail "uninterrupted run exited non-zero"
full=$(ls -d "$work"/full/*/ | head -1)

# Killed with SIGTERM after its first case.
mkdir "$work/out"
MYCONV_BIN="$work/slow_myconv" "$runner" "${grid[@]}" --output-dir "$work/out" "${slow[@]}" \
  >"$work/run1.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  run=$(ls -d "$work"/out/*/ 2>/dev/null | head -1) && [ -n "$run" ] && break
  sleep 0.1
done
run=${run%/}
if wait_for "$run" 1; then
  kill -TERM "$pid"
  wait "$pid"
  rc=$?
  pid=""
  n1=$(count "$run")
  [ $rc -eq 143 ] && ok "SIGTERM: exit 143" || fail "SIGTERM: exit $rc"
  [ "$n1" -ge 1 ] && [ "$n1" -lt 8 ] && ok "SIGTERM: valid results of $n1 finished cases" ||
    fail "SIGTERM: $n1 results"
  grep -q -- "--resume" "$work/run1.log" && ok "SIGTERM: says how to resume" ||
    fail "SIGTERM: no resume hint"; tail -3 "$work/run1.log"
else
  fail "no case recorded within 60 s"; cat "$work/run1.log"
fi

# Resumed, then killed with SIGKILL (no clean-up at all) after one more case.
MYCONV_BIN="$work/slow_myconv" "$runner" --resume "$run" >"$work/run2.log" 2>&1 &
pid=$!
if wait_for "$run" $((n1 + 1)); then
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  pid=""
  n2=$(count "$run" killed)
  [ "$n2" -gt "$n1" ] && [ "$n2" -lt 8 ] && ok "SIGKILL: valid results of $n2 cases" ||
    fail "SIGKILL: $n2 results"
  sleep 1.5
  # Processes whose command line names the run's cases/ folder (no procps needed).
  left=$(python3 - "$run/cases" <<'PY'
import os, sys
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        continue
    if sys.argv[1] in cmd and int(pid) != os.getpid():
        print(pid, cmd)
PY
)
  if [ -n "$left" ]; then
    fail "myconv still running after its runner was killed: $left"
  else
    ok "SIGKILL: myconv died with its runner"
  fi
else
  fail "resumed run recorded nothing within 60 s"; cat "$work/run2.log"
fi

# A myconv built from other source may not finish the run: one folder, one source.
printf '#!/bin/sh\nif [ "$1" = --source-info ]; then\n  "%s" --source-info | sed %s\n  exit\nfi\nexec "%s" "$@"\n' \
  "$myconv" "'s/\"diff_sha256\": [^,]*/\"diff_sha256\": \"0000\"/'" "$myconv" >"$work/other_source_myconv"
chmod +x "$work/other_source_myconv"
MYCONV_BIN="$work/other_source_myconv" "$runner" --resume "$run" >"$work/other.log" 2>&1
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c "run by a myconv built from" "$work/other.log")" -eq 1 ] &&
  ok "resume by a myconv of other source refused: $(tail -1 "$work/other.log")" ||
  { fail "resume by a myconv of other source: exit $rc"; cat "$work/other.log"; }
python3 - "$run" <<'PY' && ok "the run folder names its source (run.json, results.json)" || fail "source record"
import json, os, sys
run = sys.argv[1]
config = json.load(open(f"{run}/run.json"))
system = json.load(open(f"{run}/results.json"))["system"]
src = config["source"]
assert system["source"]["commit"] == src["commit"] and system["git_commit"] == src["commit_short"]
has_diff = os.path.exists(f"{run}/source.diff")
assert has_diff == bool(src["diff_bytes"]), (has_diff, src)
assert system["source"]["diff_file"] == ("source.diff" if has_diff else None)
PY

# The second resume completes the run.
if MYCONV_BIN=$myconv "$runner" --resume "$run" >"$work/run3.log" 2>&1; then
  ok "second resume exited 0"
else
  fail "second resume exited non-zero"; cat "$work/run3.log"
fi
if python3 - "$full" "$run" <<'PY'; then
import csv, json, sys
def load(d):
    doc = json.load(open(f"{d}/results.json"))
    rows = list(csv.DictReader(open(f"{d}/results.csv", newline="")))
    keys = [(r["problem"], r["name"], r["dtype"], r["backend"]) for r in doc["results"]]
    assert len(keys) == len(set(keys)), f"duplicates in {d}"
    assert [(r["problem"], r["name"], r["dtype"], r["backend"]) for r in rows] == keys, "CSV"
    assert doc["run"]["complete"], doc["run"]
    assert all(r["status"] in ("passed", "skipped") for r in doc["results"])
    return keys
full, resumed = load(sys.argv[1]), load(sys.argv[2])
assert len(full) == 8, len(full)
assert resumed == full, f"resumed {resumed} != uninterrupted {full}"
print("ok: the resumed run has the uninterrupted run's 8 cases, in order, none twice")
PY
  passes=$((passes + 1))
else
  fail "resumed run differs from the uninterrupted one"
fi
progress=$(cat "$work/run1.log" "$work/run2.log" "$work/run3.log" | grep -c '^\[[0-9]*/8\]')
# The SIGKILLed session may die after recording a case and before printing its line: 7 at least.
[ "$progress" -ge 7 ] && ok "$progress progress lines over the three sessions" ||
  fail "$progress progress lines"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
