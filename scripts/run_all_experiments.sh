#!/usr/bin/env bash
# Runs the experiment grid through every available backend (no GPU: the CPU backends run, the GPU
# ones are recorded as skipped) and writes a run folder results/<YYYYMMDD_HHMMSS>_<host>/ with
# all_experiments.txt (console log, set-up and build output included), results.json and
# results.csv (results/README.md), report.md and plots/ (scripts/analyze_results.py). The first
# run on a fresh machine does the set-up and the build itself.
#
#   scripts/run_all_experiments.sh [options] [-- myconv options]
#     --preset NAME|all           shapes: experiments/shapes/NAME.txt (seed, resnet50, vgg16, ...;
#                                 --preset list names them), all = every file there
#     --shapes FILE               a shape file instead (repeatable)
#     --backends LIST             e.g. libtorch_cpu,onednn_cpu (default: every built backend)
#     --dtypes LIST               fp32,tf32,fp16,bf16 (default fp32)
#     --layouts LIST              nchw,nhwc (default nchw)
#     --quick                     a smoke run: a few samples per case
#     --timeout SECONDS           per-case limit; a case that exceeds it is recorded as timeout
#                                 (default 900; 0 = none)
#     --output-dir DIR            where the run folder goes (default results/)
#     --resume RUN_DIR            run the cases RUN_DIR has not recorded yet, with its settings
#     --commit                    git add + commit the run folder when the run is done
#     --build-dir DIR             build folder (default build/)
#     --from-bundle DIR           set up from a package bundle (offline GPU host, see README)
#     --verbose                   myconv's full output on the console too (always in the log)
#   e.g. scripts/run_all_experiments.sh --preset resnet50 --backends cudnn,im2col_gemm_cuda
#        nohup scripts/run_all_experiments.sh --preset all >run.log 2>&1 &
# One progress line per case: [k/N] elapsed 00:01:23 eta 00:04:10 <problem> <backend>: <status>.
# A case that fails, crashes or hangs is recorded with its status and the run goes on; results
# are rewritten after every case, so Ctrl-C or a kill keeps the finished ones (then --resume).
# Exit codes: 0 done; 2 bad options (one line); 1 set-up, build or commit failed; 128+N killed.
# MYCONV_BIN=path skips the set-up and the build and runs that binary (tests, prebuilt binaries).
# Installed (cmake --install; PREFIX/bin/myconv-run-all), it runs the installed myconv and writes
# its run folders under ./results by default.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

prog=run_all_experiments.sh
usage_error() {
  echo "$prog: error: $* (see --help)" >&2
  exit 2
}

preset="" shapes=() backends="" dtypes="" layouts="" quick=0 timeout="" out_root=""
resume="" commit=0 build_dir="$MYCONV_ROOT/build" bundle="" verbose=0 extra=()
while [ $# -gt 0 ]; do
  opt=$1
  case "$opt" in
    --preset | --shapes | --backends | --dtypes | --layouts | --timeout | --output-dir | \
      --resume | --build-dir | --from-bundle)
      [ $# -ge 2 ] && [ -n "$2" ] && [[ "$2" != --* ]] || usage_error "$opt needs a value"
      val=$2
      shift 2
      case "$opt" in
        --preset) preset=$val ;;
        --shapes) shapes+=("$val") ;;
        --backends) backends=$val ;;
        --dtypes) dtypes=$val ;;
        --layouts) layouts=$val ;;
        --timeout) timeout=$val ;;
        --output-dir) out_root=$val ;;
        --resume) resume=$val ;;
        --build-dir) build_dir=$val ;;
        --from-bundle) bundle=$val ;;
      esac
      ;;
    --quick) quick=1; shift ;;
    --commit) commit=1; shift ;;
    --verbose) verbose=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) usage_error "unknown option '$opt'" ;;
  esac
done

# ---- checks that need no build: bad options fail here, before any set-up --------------------
list_ok() {  # list_ok WHAT LIST ALLOWED...
  local what=$1 list=$2 item allowed
  shift 2
  [ -n "${list//,/}" ] || usage_error "$what: empty list"
  IFS=, read -r -a items <<<"$list"
  for item in "${items[@]}"; do
    for allowed in "$@"; do [ "$item" != "$allowed" ] || continue 2; done
    usage_error "$what: unknown value '$item' (allowed: $*)"
  done
}
[ -z "$dtypes" ] || list_ok --dtypes "$dtypes" fp32 tf32 fp16 bf16
[ -z "$layouts" ] || list_ok --layouts "$layouts" nchw nhwc
[[ -z "$timeout" || "$timeout" =~ ^[0-9]+([.][0-9]+)?$ ]] ||
  usage_error "--timeout: expected seconds (a number, 0 = none), got '$timeout'"
for arg in "${extra[@]}"; do
  case "${arg%%=*}" in
    --shapes | --problem | --input_size | --input-size | --kernel_size | --kernel-size | \
      --batch_size | --batch-size | --in_channels | --in-channels | --out_channels | \
      --out-channels | --stride | --padding | --dilation | --groups | --dtype | --layout | \
      --backend)
      usage_error "'$arg' after --: the grid comes from --preset/--shapes, --dtypes, --layouts," \
        "--backends" ;;
    --json | --csv | --list-cases | --list-backends | --help | -h | --version)
      usage_error "'$arg' after --: the runner sets the outputs itself" ;;
  esac
done
if [ -n "$MYCONV_INSTALLED_BIN" ]; then
  [ -z "$bundle" ] || usage_error "--from-bundle: this is an installed myconv; nothing is built"
  MYCONV_BIN=${MYCONV_BIN:-$MYCONV_INSTALLED_BIN/myconv}
fi
if [ -n "${MYCONV_BIN:-}" ] && [ ! -x "$MYCONV_BIN" ]; then
  usage_error "MYCONV_BIN: '$MYCONV_BIN' is not an executable"
fi
if [ -n "$resume" ]; then
  if [ -n "$preset$backends$dtypes$layouts$out_root" ] || [ ${#shapes[@]} -gt 0 ] ||
    [ $quick -eq 1 ] || [ ${#extra[@]} -gt 0 ]; then
    usage_error "--resume takes the run's own settings (run.json); give only --timeout," \
      "--commit, --build-dir, --from-bundle, --verbose"
  fi
  [ -f "$resume/run.json" ] || usage_error "--resume: '$resume' is not a run folder (no run.json)"
  run_dir=$(cd "$resume" && pwd)
  label=""
else
  if [ ${#shapes[@]} -gt 0 ]; then
    [ -z "$preset" ] || usage_error "give --preset or --shapes, not both"
    for s in "${shapes[@]}"; do [ -r "$s" ] || usage_error "--shapes: cannot read '$s'"; done
    label="shapes $(for s in "${shapes[@]}"; do basename "$s"; done | paste -sd, -)"
  else
    preset=${preset:-seed}
    presets=$(cd "$MYCONV_ROOT/experiments/shapes" && ls -1 ./*.txt | sed 's|^\./||; s|\.txt$||' |
      paste -sd' ' -)
    case "$preset" in
      list) echo "presets: $presets all"; exit 0 ;;
      all) mapfile -t shapes < <(ls "$MYCONV_ROOT"/experiments/shapes/*.txt) ;;
      *)
        [[ "$preset" =~ ^[A-Za-z0-9_.-]+$ && -f "$MYCONV_ROOT/experiments/shapes/$preset.txt" ]] ||
          usage_error "--preset: expected one of $presets, all; got '$preset'"
        shapes=("$MYCONV_ROOT/experiments/shapes/$preset.txt") ;;
    esac
    label="preset $preset"
  fi
  default_out=$MYCONV_ROOT/results
  [ -z "$MYCONV_INSTALLED_BIN" ] || default_out=$PWD/results  # an install tree is not for results
  out_root=${out_root:-$default_out}
  mkdir -p "$out_root" 2>/dev/null || usage_error "--output-dir: cannot create '$out_root'"
  stamp="$(date -u +%Y%m%d_%H%M%S)_$(hostname -s 2>/dev/null || hostname)"
  run_dir="$(cd "$out_root" && pwd)/$stamp"
  n=1
  while ! mkdir "$run_dir" 2>/dev/null; do  # two runs in one second get _2, _3, ...
    n=$((n + 1))
    run_dir="$(cd "$out_root" && pwd)/${stamp}_$n"
    [ $n -lt 100 ] || usage_error "cannot create a run folder in '$out_root'"
  done
fi
log="$run_dir/all_experiments.txt"

# ---- set-up and build: their output goes to the log only ------------------------------------
if [ -n "${MYCONV_BIN:-}" ]; then
  myconv=$MYCONV_BIN
  echo "[myconv] MYCONV_BIN=$myconv: no set-up, no build" >>"$log"
else
  myconv_log "set-up and build of myconv in $build_dir (output in $log)"
  {
    echo "== set-up and build, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    if [ -n "$bundle" ]; then
      "$MYCONV_ROOT/scripts/setup.sh" --from-bundle "$bundle"
    elif [ ! -d "$MYCONV_PREFIX/usr" ]; then
      "$MYCONV_ROOT/scripts/setup.sh"  # quick when everything is installed
    fi
    mapfile -t args < <(myconv_cmake_args)
    cmake -S "$MYCONV_ROOT" -B "$build_dir" "${args[@]}"
    cmake --build "$build_dir" -j "$(myconv_jobs)" --target myconv
  } >>"$log" 2>&1 || {
    echo "$prog: error: set-up or build failed; the last lines of $log:" >&2
    tail -n 15 "$log" >&2
    exit 1
  }
  myconv="$build_dir/experiments/myconv"
fi

runner=(python3 "$MYCONV_ROOT/scripts/run_cases.py" --run-dir "$run_dir" --myconv "$myconv")
[ -z "$timeout" ] || runner+=(--timeout "$timeout")
[ $commit -eq 0 ] || runner+=(--commit)
[ $verbose -eq 0 ] || runner+=(--verbose)
if [ -n "$resume" ]; then
  runner+=(--resume)
else
  runner+=(--fresh --label "$label")
  [ $quick -eq 0 ] || runner+=(--quick)
  for s in "${shapes[@]}"; do
    runner+=("--grid-arg=--shapes" "--grid-arg=$(cd "$(dirname "$s")" && pwd)/$(basename "$s")")
  done
  [ -z "$backends" ] || runner+=("--grid-arg=--backend" "--grid-arg=$backends")
  [ -z "$dtypes" ] || runner+=("--grid-arg=--dtype" "--grid-arg=$dtypes")
  [ -z "$layouts" ] || runner+=("--grid-arg=--layout" "--grid-arg=$layouts")
  for e in "${extra[@]}"; do runner+=("--extra-arg=$e"); done
fi
# exec: the runner gets this PID, so `kill PID` and Ctrl-C reach it (it stops myconv, keeps the
# finished cases and says how to resume).
exec "${runner[@]}"
