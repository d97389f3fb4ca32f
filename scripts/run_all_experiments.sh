#!/usr/bin/env bash
# Runs the experiment grid through every available backend and writes a run folder
# results/<YYYYMMDD_HHMMSS>_<host>/ with all_experiments.txt (the console log), results.json and
# results.csv. First run on a fresh machine does the set-up and the build.
#
#   scripts/run_all_experiments.sh [--preset seed|resnet50|all] [--shapes FILE] [--quick]
#                                  [--output-dir DIR] [--from-bundle DIR] [-- myconv options]
# On a machine without a GPU the CPU backends run (GPU backends are reported as skipped).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

preset=seed
shapes=()
quick=0
out_root="$MYCONV_ROOT/results"
bundle=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --preset) preset=$2; shift 2 ;;
    --shapes) shapes+=("$2"); shift 2 ;;
    --quick) quick=1; shift ;;
    --output-dir) out_root=$2; shift 2 ;;
    --from-bundle) bundle=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_all_experiments.sh: error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if [ ${#shapes[@]} -eq 0 ]; then
  case "$preset" in
    seed) shapes=("$MYCONV_ROOT/experiments/shapes/seed.txt") ;;
    resnet50) shapes=("$MYCONV_ROOT/experiments/shapes/resnet50.txt") ;;
    all) shapes=("$MYCONV_ROOT/experiments/shapes/seed.txt" "$MYCONV_ROOT/experiments/shapes/resnet50.txt") ;;
    *) echo "run_all_experiments.sh: error: --preset must be seed, resnet50 or all, got '$preset'" >&2; exit 2 ;;
  esac
fi

if [ -n "$bundle" ]; then
  "$MYCONV_ROOT/scripts/setup.sh" --from-bundle "$bundle"
elif [ ! -d "$MYCONV_PREFIX/usr" ]; then
  "$MYCONV_ROOT/scripts/setup.sh"
fi
build_dir="$MYCONV_ROOT/build"
myconv_use_prefix
mapfile -t args < <(myconv_cmake_args)
cmake -S "$MYCONV_ROOT" -B "$build_dir" "${args[@]}" >/dev/null
cmake --build "$build_dir" -j "$(myconv_jobs)" --target myconv >/dev/null

run_dir="$out_root/$(date -u +%Y%m%d_%H%M%S)_$(hostname -s)"
mkdir -p "$run_dir"
timing=()
if [ $quick -eq 1 ]; then timing=(--warmup 1 --min-time-ms 5 --max-time-ms 50); fi
shape_args=()
for s in "${shapes[@]}"; do shape_args+=(--shapes "$s"); done

myconv_log "writing $run_dir"
set +e
"$build_dir/experiments/myconv" "${shape_args[@]}" "${timing[@]}" "${extra[@]}" \
  --json "$run_dir/results.json" --csv "$run_dir/results.csv" 2>&1 | tee "$run_dir/all_experiments.txt"
rc=${PIPESTATUS[0]}
set -e
myconv_log "done (exit $rc): $run_dir"
exit "$rc"
