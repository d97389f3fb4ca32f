#!/usr/bin/env bash
# scripts/run_all_experiments.sh keeps going past a case that hangs or crashes (usage:
# test_run_all_timeout.sh path/to/myconv). MYCONV_BIN points at a wrapper around myconv that runs
# an invocation's problems in order: at the problem named "hang" it hangs (after the first
# backend when that problem comes first), at "crash" it dies of SIGSEGV. The hung case is recorded
# as timeout, the crashed ones as failed ("crashed: signal 11"), the other cases run: "before",
# which the crashing process ran ahead of the crash, is kept from that process, and each
# unrecorded problem runs again in a new process with the others of its queue (4 invocations);
# a command line the program refuses as a whole runs again one problem per process.
# The run is made in a scratch git repository with --commit, which commits it.
set -u
myconv=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; passes=$((passes + 1)); }

cat >"$work/fake_myconv" <<EOF
#!/usr/bin/env bash
real='$myconv'
EOF
cat >>"$work/fake_myconv" <<'EOF'
# An invocation runs its --problem list in order: the problems before the first "hang" or "crash"
# one run for real (into the same --json), then the program hangs or crashes there. A hang on
# the invocation's first problem comes after its first backend.
problems=() others=() k=-1
while [ $# -gt 0 ]; do
  if [ "$1" = --problem ]; then
    case "$2" in *'n"hang"'* | *'n"crash"'*) [ $k -ge 0 ] || k=$((${#problems[@]} / 2)) ;; esac
    problems+=("$1" "$2")
    shift 2
  else
    others+=("$1")
    shift
  fi
done
case " ${problems[*]} " in  # a problem the program refuses: its whole command line (exit 2)
  *'n"refuse"'*) echo "myconv: error: --problem: refused (a stand-in)" >&2; exit 2 ;;
esac
[ $k -ge 0 ] || exec "$real" "${problems[@]}" "${others[@]}"
[ $k -eq 0 ] || "$real" "${problems[@]:0:$((2 * k))}" "${others[@]}"
case "${problems[$((2 * k + 1))]}" in
  *'n"crash"'*) kill -SEGV $$ ;;
esac
if [ $k -eq 0 ]; then
  for i in "${!others[@]}"; do
    [ "${others[$i]}" != --backend ] || others[$((i + 1))]=${others[$((i + 1))]%%,*}
  done
  "$real" "${problems[@]:0:2}" "${others[@]}"
fi
sleep 300
EOF
chmod +x "$work/fake_myconv"
cat >"$work/shapes.txt" <<'EOF'
mb1ic2ih8oc2kh3n"hang"
mb1ic2ih7oc2kh3n"before"
mb1ic2ih9oc2kh3n"crash"
mb1ic2ih10oc2kh3n"fine"
EOF

# A scratch repository holding a copy of the scripts, for --commit.
repo="$work/repo"
mkdir -p "$repo"
cp -r "$root/scripts" "$repo/scripts"
git -C "$repo" init -q
git -C "$repo" config user.email test@example.invalid
git -C "$repo" config user.name "myconv test"
git -C "$repo" add scripts
git -C "$repo" commit -q -m "scripts"

limit=15
start=$(date +%s)
MYCONV_BIN="$work/fake_myconv" "$repo/scripts/run_all_experiments.sh" --quick --commit \
  --shapes "$work/shapes.txt" --backends libtorch_cpu,onednn_cpu --timeout $limit \
  >"$work/console" 2>&1
rc=$?
took=$(($(date +%s) - start))
cat "$work/console"
[ $rc -eq 0 ] && ok "run exited 0 after ${took}s" || fail "run exited $rc"
[ $took -lt 120 ] && ok "the hang cost about one time limit" || fail "run took ${took}s"
run=$(ls -d "$repo"/results/*/ 2>/dev/null | head -1)
run=${run%/}
if [ -z "$run" ] || [ ! -f "$run/results.json" ]; then
  fail "no run folder with results.json"
  echo "$passes passed, $failures failed"
  exit 1
fi

if python3 - "$run" "$limit" <<'PY'; then
import csv, json, sys
run, limit = sys.argv[1], sys.argv[2]
doc = json.load(open(f"{run}/results.json"))
res = {(r["name"], r["backend"]): r for r in doc["results"]}
assert len(doc["results"]) == 8 == len(res), f"{len(doc['results'])} results, expected 8 unique"
assert doc["run"]["complete"], doc["run"]
def status(name, backend):
    return res[(name, backend)]["status"]
# hang: the first backend ran, the second hung.
assert status("hang", "libtorch_cpu") in ("passed", "skipped"), res[("hang", "libtorch_cpu")]
t = res[("hang", "onednn_cpu")]
assert t["status"] == "timeout", t
assert f"no result within {limit} s" in t["reason"], t["reason"]
assert t["problem"] == "mb1ic2ih8oc2kh3" and t["params"]["ih"] == 8 and t["suite"] == "conv"
assert t["command"].endswith("--problem mb1ic2ih8oc2kh3 --backend onednn_cpu"), t["command"]
assert t["device"] == "cpu" and t["dtype"] == "fp32" and t["flop"] > 0
# crash: both backends, one at a time.
for b in ("libtorch_cpu", "onednn_cpu"):
    r = res[("crash", b)]
    assert r["status"] == "failed" and r["reason"].startswith("crashed: signal 11"), r
# before, fine: the run went on; "before" ran in the process that then crashed (its case file).
for name in ("before", "fine"):
    for b in ("libtorch_cpu", "onednn_cpu"):
        assert status(name, b) in ("passed", "skipped"), res[(name, b)]
crashed = json.load(open(f"{run}/cases/0002.json"))["results"]
assert {r["name"] for r in crashed} == {"before"}, [r["name"] for r in crashed]
assert json.load(open(f"{run}/cases/0002-runner.json"))["results"][0]["name"] == "crash"
# One process per queue, a new one after each hang or crash: hang+before+crash+fine, then
# before+crash+fine, crash (its second backend), fine.
log = open(f"{run}/all_experiments.txt").read().splitlines()
invocations = [l for l in log if l.startswith("$ ") and " --problem " in l]
assert [l.count(" --problem ") for l in invocations] == [4, 3, 1, 1], invocations
# The slot of every case: the program's split and the runner's view (results/README.md).
for r in doc["results"]:
    slot = r["slot_ms"]
    assert slot["wall"] > 0 and slot["runner"] >= 0, slot
    if r["status"] in ("timeout", "failed"):
        assert slot["lost"] == slot["wall"], slot
    else:
        parts = sum(v or 0 for k, v in slot.items() if k not in ("total", "wall", "runner"))
        assert abs(parts - slot["total"]) < 1e-6 * slot["total"] + 1e-3, slot
assert res[("hang", "onednn_cpu")]["slot_ms"]["lost"] >= 1000 * float(limit), "the limit lost"
rows = list(csv.DictReader(open(f"{run}/results.csv", newline="")))
assert len(rows) == 8, len(rows)
by = {(r["name"], r["backend"]): r for r in rows}
assert by[("hang", "onednn_cpu")]["status"] == "timeout"
assert by[("hang", "onednn_cpu")]["command"] == t["command"]
assert by[("crash", "libtorch_cpu")]["reason"].startswith("crashed: signal 11")
print("ok: timeout, crashes and the other cases recorded; CSV rows for synthesized records")
PY
  passes=$((passes + 1))
else
  fail "records of the hung and crashed cases"
fi
grep -q '^\[[0-9]*/8\] .* mb1ic2ih8oc2kh3 onednn_cpu: timeout' "$work/console" &&
  ok "progress line of the timeout" || fail "no progress line with status timeout"

# A command line the program refuses (exit 2, not its memory gate) names no culprit: its problems
# run again one per process, and only the refused one is recorded failed.
printf 'mb1ic2ih8oc2kh3n"ok1"\nmb1ic2ih9oc2kh3n"refuse"\nmb1ic2ih10oc2kh3n"ok2"\n' >"$work/refuse.txt"
MYCONV_BIN="$work/fake_myconv" "$root/scripts/run_all_experiments.sh" --quick \
  --shapes "$work/refuse.txt" --backends onednn_cpu --output-dir "$work/out_refuse" \
  >"$work/console_refuse" 2>&1
if python3 - "$work"/out_refuse/*/ <<'PY'; then
import json, sys
run = sys.argv[1]
res = {r["name"]: r for r in json.load(open(f"{run}/results.json"))["results"]}
assert res["ok1"]["status"] == res["ok2"]["status"] == "passed", res
assert res["refuse"]["status"] == "failed" and "exited with code 2" in res["refuse"]["reason"]
log = open(f"{run}/all_experiments.txt").read().splitlines()
calls = [l.count(" --problem ") for l in log if l.startswith("$ ") and " --problem " in l]
assert calls == [3, 1, 1, 1], calls
PY
  ok "a refused command line: its problems one per process, the refused one failed"
else
  fail "refused command line"; tail -5 "$work/console_refuse"
fi

# --commit: the run folder is committed, nothing of it is left uncommitted.
subject=$(git -C "$repo" log -1 --format=%s)
rel=${run#"$repo"/}
if [[ "$subject" == "results: shapes shapes.txt run on "* ]] &&
    git -C "$repo" ls-files --error-unmatch "$rel/results.json" "$rel/results.csv" \
      "$rel/all_experiments.txt" >/dev/null 2>&1 &&
    [ -z "$(git -C "$repo" status --porcelain -- "$rel")" ]; then
  ok "committed: $subject"
else
  fail "commit: subject '$subject'; status: $(git -C "$repo" status --porcelain | head -5)"
fi

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
