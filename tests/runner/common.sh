# What the runner's shell tests (tests/runner/test_run_all_*.sh) share; source it after `set -u`:
# root (the checkout), runner (scripts/run_all_experiments.sh), work (a scratch folder removed on
# exit, with an empty out/ for run folders), the pass/fail counters with ok and fail, the closing
# line and status (finish), and expect_usage_error WHAT ARGS...: the runner with ARGS must exit 2
# with one line on stderr and leave no run folder.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
runner="$root/scripts/run_all_experiments.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/out"
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; passes=$((passes + 1)); }
finish() {
  echo "$passes passed, $failures failed"
  [ $failures -eq 0 ]
}

expect_usage_error() {
  local what=$1
  shift
  "$runner" --output-dir "$work/out" "$@" >"$work/stdout" 2>"$work/stderr"
  local rc=$? lines
  lines=$(wc -l <"$work/stderr")
  if [ $rc -ne 2 ]; then fail "$what: exit $rc, expected 2"; cat "$work/stderr"; return; fi
  if [ "$lines" -ne 1 ]; then fail "$what: $lines lines on stderr"; cat "$work/stderr"; return; fi
  if [ -n "$(ls -A "$work/out")" ]; then fail "$what: left $(ls "$work/out")"; rm -rf "$work/out"/*; return; fi
  ok "$what -> $(cat "$work/stderr")"
}
