#!/usr/bin/env bash
# Runs the experiment grid of a suite through every available backend (no GPU: the CPU backends
# run, the GPU ones are recorded as skipped) and writes a run folder
# results/<YYYYMMDD_HHMMSS>_<host>/ (another suite's: ..._<host>_<suite>/) with all_experiments.txt
# (console log, set-up and build output included), results.json and results.csv
# (results/README.md), report.md and plots/ (scripts/analyze_results.py). The first run on a
# fresh machine does the set-up and the build itself.
#
#   scripts/run_all_experiments.sh [options] [-- program options]
#     --suite conv|ops|mlp|transformer|all
#                                 conv: myconv's convolutions (default); ops: myops' tensor ops;
#                                 mlp: mymlp's MLP (the lecture's example and d4096 L8 B4096 s5,
#                                 the four scaling studies, the matmul dims, the example's
#                                 profile in RUN/profile, fp32 and bf16; the Python reference
#                                 scripts/references/mlp_reference.py where python3 has torch, in
#                                 RUN/references/); transformer: mytransformer's generations
#                                 (below); all: conv and ops, one run folder each (not mlp,
#                                 transformer)
#   conv suite (myconv):
#     --preset NAME|all           shapes: experiments/shapes/NAME.txt (seed, resnet50, vgg16, ...;
#                                 --preset list names them), all = every file there
#     --shapes FILE               a shape file instead (repeatable)
#     --layout LIST               nchw,nhwc (default nchw)
#   op suite (myops; default: every op, --size all (every size class but xlarge), fp32,bf16):
#     --size LIST                 small,medium,large,xlarge,batched or all (experiments/ops/)
#     --ops-file FILE             an op list instead (repeatable; one descriptor per line)
#     --category LIST             only these: element,activation,reduction,normalization,matmul,
#                                 memory
#     --op LIST                   only these ops, e.g. add,softmax,transpose
#   transformer suite (mytransformer; default: gpt2, qwen2-0.5b and llama-3.2-1b, preset small_scale, every
#   implementation built for the device, fp16 on a GPU, fp32 on the CPU; then the Hugging Face
#   reference where transformers and torch import, into RUN/hf_reference/):
#     --model LIST                built-in names, config.json files or checkpoint folders
#     --preset NAME               experiments/transformer/presets.json (--preset list names them)
#     --device auto|cpu|cuda      default auto: the GPU where there is one
#     --no-hf-reference           no Hugging Face reference (scripts/references/hf_reference.py)
#   conv and op suites:
#     --trust-check               after the cases, scripts/references/trust_check.py times a
#                                 sample of the libtorch_cuda cases again in Python PyTorch on the
#                                 same GPU (RUN/trust.json, trust.md; a section of the report)
#   conv suite:
#     --inductor-reference        after the cases, scripts/references/inductor_reference.py runs
#                                 torch.compile (default and max-autotune) on each GPU problem
#                                 (RUN/inductor_reference/; rows torch_inductor and
#                                 torch_inductor_max_autotune in the report; compiles take
#                                 seconds to a minute per problem, hence asked for)
#     --quick                     tiny random models (experiments/transformer/configs/), preset
#                                 quick_test
#   every suite:
#     --trace                     each program call writes Chrome traces of a few calls per case
#                                 after its timed sampling (--trace-dir RUN/traces); the
#                                 transformer report reads them for its operation analysis
#     --backend LIST              e.g. libtorch_cpu,onednn_cpu (default: every built backend;
#                                 with --suite all, names every suite knows)
#     --dtype LIST                fp32,tf32,fp16,bf16 (default: conv fp32; ops fp32,bf16);
#                                 transformer: one of fp32, fp16, bf16 (its cases' descriptors
#                                 carry no dtype: one per run folder)
#     --quick                     a smoke run: a few samples per case (ops: --size small, fp32
#                                 unless given)
#     --timeout SECONDS           per-case limit; a case that exceeds it is recorded as timeout
#                                 (default 900; 0 = none)
#     --isolate                   one program process per problem (default: a process runs many
#                                 problems back to back and is replaced after a crash or hang)
#     --output-dir DIR            where the run folder goes (default results/)
#     --resume RUN_DIR            run the cases RUN_DIR has not recorded yet, with its settings
#                                 (one run folder: with --suite all, resume each)
#   spreading a sweep out (docs/sweeps.md):
#     --gpus all|N|LIST           one worker per GPU (LIST: indices or UUIDs), CUDA_VISIBLE_DEVICES
#                                 each, the CPU backends in a worker of their own on other cores;
#                                 one run folder (workers/ holds each worker's); no GPU: exit 2
#     --shard I/N                 run only shard I of N of the case list (deterministic, balanced
#                                 by estimated cost); scripts/merge_results.py joins the shards
#     --cost-from RESULTS.json    balance shards and GPU workers by an earlier run's times
#                                 (default: by FLOPs)
#     --plan                      list the cases and print the shards' sizes; run nothing
#     --commit                    git add + commit the run folder when the run is done
#     --build-dir DIR             build folder (default build/; one configured for another source
#                                 tree is refused: remove it or name a fresh one)
#     --from-bundle DIR           set up from a package bundle (offline GPU host, see README)
#     --verbose                   the program's full output on the console too (always in the log)
#   e.g. scripts/run_all_experiments.sh --preset resnet50 --backend cudnn,im2col_gemm_cuda
#        scripts/run_all_experiments.sh --suite ops --category reduction --dtype fp32
#        scripts/run_all_experiments.sh --suite transformer --model gpt2 --preset quick_test
#        nohup scripts/run_all_experiments.sh --suite all --preset all >run.log 2>&1 &
# One progress line per case: [k/N] elapsed 00:01:23 eta 00:04:10 <problem> <backend>: <status>.
# A case that fails, crashes or hangs is recorded with its status and the run goes on; results
# are rewritten after every case, so Ctrl-C or a kill keeps the finished ones (then --resume).
# Exit codes: 0 done; 2 bad options or a --build-dir configured for another source tree (one
# line, nothing made); 1 set-up, configure, build or commit failed (with the log's last lines);
# 128+N killed.
# MYCONV_BIN=path (MYOPS_BIN, MYMLP_BIN, MYTRANSFORMER_BIN for the other suites) skips the set-up
# and the build and runs that binary (tests, prebuilt binaries). The HF reference runs with
# $MYCONV_PYTHON, else python3. Installed (cmake --install; PREFIX/bin/myconv-run-all), it runs
# the installed programs and writes its run folders under ./results by default.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

prog=run_all_experiments.sh
usage_error() {
  echo "$prog: error: $* (see --help)" >&2
  exit 2
}

suite="" preset="" shapes=() backends="" dtypes="" layouts="" quick=0 timeout="" out_root=""
resume="" commit=0 build_dir="$MYCONV_ROOT/build" bundle="" verbose=0 extra=()
shard="" gpus="" cost_from="" plan=0 isolate=0
sizes="" ops_files=() categories="" ops=""
models="" device="" hf_reference=1 trust_check=0 inductor_reference=0 trace=0
# The programs' grammar (core/grammar.hpp): '_' for '-' in an option's name, and a list option's
# plural for its documented singular.
canonical_option() {
  local n=${1//_/-}
  case "$n" in
    --backends | --dtypes | --layouts | --sizes | --ops | --models) n=${n%s} ;;
    --categories) n=--category ;;
    --shape) n=--shapes ;;
    --ops-files) n=--ops-file ;;
  esac
  echo "$n"
}
while [ $# -gt 0 ]; do
  case "$1" in --?*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;; esac  # --name=value
  opt=$1
  case "$opt" in --?*) opt=$(canonical_option "$opt") ;; esac
  case "$opt" in
    --preset | --shapes | --backend | --dtype | --layout | --timeout | --output-dir | \
      --resume | --build-dir | --from-bundle | --suite | --size | --ops-file | --category | \
      --op | --shard | --gpus | --cost-from | --model | --device)
      [ $# -ge 2 ] && [ -n "$2" ] && [[ "$2" != --* ]] || usage_error "$opt needs a value"
      val=$2
      shift 2
      case "$opt" in
        --preset) preset=$val ;;
        --shapes) shapes+=("$val") ;;
        --backend) backends=$val ;;
        --dtype) dtypes=$val ;;
        --layout) layouts=$val ;;
        --timeout) timeout=$val ;;
        --output-dir) out_root=$val ;;
        --resume) resume=$val ;;
        --build-dir) build_dir=$val ;;
        --from-bundle) bundle=$val ;;
        --suite) suite=$val ;;
        --size) sizes=$val ;;
        --ops-file) ops_files+=("$val") ;;
        --category) categories=$val ;;
        --op) ops=$val ;;
        --shard) shard=$val ;;
        --gpus) gpus=$val ;;
        --cost-from) cost_from=$val ;;
        --model) models=$val ;;
        --device) device=$val ;;
      esac
      ;;
    --quick) quick=1; shift ;;
    --commit) commit=1; shift ;;
    --verbose) verbose=1; shift ;;
    --plan) plan=1; shift ;;
    --isolate) isolate=1; shift ;;
    --no-hf-reference) hf_reference=0; shift ;;
    --trust-check) trust_check=1; shift ;;
    --inductor-reference) inductor_reference=1; shift ;;
    --trace) trace=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) usage_error "unknown option '$1'" ;;
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
[ -z "$suite" ] || [[ "$suite" =~ ^(conv|ops|mlp|transformer|all)$ ]] ||
  usage_error "--suite: expected conv, ops, mlp, transformer or all; got '$suite'"
[ -z "$dtypes" ] || list_ok --dtype "$dtypes" fp32 tf32 fp16 bf16
[ -z "$layouts" ] || list_ok --layout "$layouts" nchw nhwc
[ -z "$sizes" ] || list_ok --size "$sizes" small medium large xlarge batched all
[ -z "$categories" ] ||
  list_ok --category "$categories" element activation reduction normalization matmul memory
[ -z "$ops" ] || [ -n "${ops//,/}" ] || usage_error "--op: empty list"
conv_opts="$preset$layouts${shapes[*]}" ops_opts="$sizes$categories$ops${ops_files[*]}"
case "${suite:-conv}" in
  conv) [ -z "$ops_opts" ] ||
    usage_error "--size, --ops-file, --category and --op belong to --suite ops" ;;
  ops) [ -z "$conv_opts" ] ||
    usage_error "--preset, --shapes and --layout belong to --suite conv" ;;
  mlp) [ -z "$conv_opts$ops_opts" ] ||
    usage_error "--suite mlp takes none of the conv or op grid options" ;;
  transformer) [ -z "$layouts${shapes[*]}$ops_opts" ] ||
    usage_error "--suite transformer takes none of the conv or op grid options but --preset" ;;
esac
if [ -z "$resume" ] && [ "$suite" != transformer ] &&
  { [ -n "$models$device" ] || [ $hf_reference -eq 0 ]; }; then
  usage_error "--model, --device and --no-hf-reference belong to --suite transformer"
fi
[ $trust_check -eq 0 ] || [ -n "$resume" ] || [[ "${suite:-conv}" =~ ^(conv|ops|all)$ ]] ||
  usage_error "--trust-check belongs to the conv and op suites"
[ $inductor_reference -eq 0 ] || [ -n "$resume" ] || [[ "${suite:-conv}" =~ ^(conv|all)$ ]] ||
  usage_error "--inductor-reference belongs to the conv suite"
[ -z "$device" ] || [[ "$device" =~ ^(auto|cpu|cuda)$ ]] ||
  usage_error "--device: expected auto, cpu or cuda; got '$device'"
[ -z "$models" ] || [ -n "${models//,/}" ] || usage_error "--model: empty list"
if [ "$suite" = transformer ] && [ -n "$dtypes" ]; then
  [[ "$dtypes" =~ ^(fp32|fp16|bf16)$ ]] ||
    usage_error "--dtype: the transformer suite takes one of fp32, fp16, bf16 (a run folder" \
      "per dtype: its cases' descriptors carry none); got '$dtypes'"
fi
[ ${#ops_files[@]} -eq 0 ] || [ -z "$sizes" ] ||
  usage_error "give --size or --ops-file, not both (an op list replaces the size classes)"
# Input files: regular and readable (a FIFO or a folder is refused here, never opened).
readable_file() { [ -f "$1" ] && [ -r "$1" ]; }
for f in "${ops_files[@]}"; do
  readable_file "$f" || usage_error "--ops-file: cannot read '$f' (not a readable file)"
done
if [ -n "$shard" ]; then
  [[ "$shard" =~ ^([0-9]+)/([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" -ge 1 ] &&
    [ "${BASH_REMATCH[1]}" -le "${BASH_REMATCH[2]}" ] ||
    usage_error "--shard: expected I/N with 1 <= I <= N (e.g. 2/4); got '$shard'"
fi
[ -z "$gpus" ] || [[ "$gpus" =~ ^(all|[0-9]+|[0-9A-Za-z-]+(,[0-9A-Za-z-]+)*)$ ]] ||
  usage_error "--gpus: expected all, a count or a list of GPU indices or UUIDs; got '$gpus'"
[ -z "$cost_from" ] || readable_file "$cost_from" ||
  usage_error "--cost-from: cannot read '$cost_from' (not a readable file)"
[ -z "$cost_from" ] || [ -n "$shard$gpus$plan" ] ||
  usage_error "--cost-from balances --shard or --gpus; give one of them"
[[ -z "$timeout" || "$timeout" =~ ^[0-9]+([.][0-9]+)?$ ]] ||
  usage_error "--timeout: expected seconds (a number, 0 = none), got '$timeout'"
prev=""
for arg in "${extra[@]}"; do
  name=${arg%%=*}
  case "$name" in --?*) name=${name//_/-} ;; esac
  case "$name" in
    --shapes | --problem | --input-size | --input-sizes | --kernel-size | --kernel-sizes | \
      --batch-size | --batch-sizes | --in-channels | --out-channels | --stride | --strides | \
      --padding | --paddings | --dilation | --dilations | --groups | --dtype | --dtypes | \
      --layout | --layouts | --backend | --backends | --size | --sizes | --category | \
      --categories | --op | --ops | --ops-file)
      usage_error "'$arg' after --: the grid comes from --preset/--shapes, --size/--ops-file," \
        "--dtype, --layout, --backend" ;;
    --json | --csv | --markdown | --format | --list-cases | --list-backends | --list-ops | \
      --help | -h | --version)
      usage_error "'$arg' after --: the runner sets the outputs itself" ;;
    --no-peaks)
      usage_error "'$arg' after --: the runner has the limits measured once per run" ;;
    --model | --models | --device | --impl | --preset | --input-length | --input-lengths | \
      --output-length)
      usage_error "'$arg' after --: the transformer grid comes from --model, --device," \
        "--backend, --preset" ;;
    --output-file | --dump-logits | --show-presets | --show-config | --create | --output)
      usage_error "'$arg' after --: the runner sets the outputs itself" ;;
  esac
  # Each case of --timing both is two records of one identity: run the two modes as two runs.
  if [ "$arg" = --timing=both ] || { [ "$prev" = --timing ] && [ "$arg" = both ]; }; then
    usage_error "'--timing both' after --: run --timing real and --timing pure as two runs"
  fi
  prev=$arg
done
if [ -n "$MYCONV_INSTALLED_BIN" ]; then
  [ -z "$bundle" ] || usage_error "--from-bundle: this is an installed myconv; nothing is built"
  MYCONV_BIN=${MYCONV_BIN:-$MYCONV_INSTALLED_BIN/myconv}
  MYOPS_BIN=${MYOPS_BIN:-$MYCONV_INSTALLED_BIN/myops}
  MYMLP_BIN=${MYMLP_BIN:-$MYCONV_INSTALLED_BIN/mymlp}
  MYTRANSFORMER_BIN=${MYTRANSFORMER_BIN:-$MYCONV_INSTALLED_BIN/mytransformer}
fi
# The program of each suite, its build target, and the variable that names a prebuilt one.
program_of() {
  case "$1" in ops) echo myops ;; mlp) echo mymlp ;; transformer) echo mytransformer ;;
    *) echo myconv ;; esac
}
bin_var_of() {
  case "$1" in ops) echo MYOPS_BIN ;; mlp) echo MYMLP_BIN ;; transformer) echo MYTRANSFORMER_BIN ;;
    *) echo MYCONV_BIN ;; esac
}
prebuilt_of() {
  local var
  var=$(bin_var_of "$1")
  echo "${!var:-}"
}
if [ -n "$resume" ]; then
  if [ -n "$suite$preset$backends$dtypes$layouts$out_root$ops_opts$models$device" ] ||
    [ ${#shapes[@]} -gt 0 ] || [ $quick -eq 1 ] || [ ${#extra[@]} -gt 0 ] ||
    [ -n "$shard$gpus$cost_from" ] || [ $plan -eq 1 ] || [ $hf_reference -eq 0 ] ||
    [ $trust_check -eq 1 ] || [ $inductor_reference -eq 1 ] || [ $isolate -eq 1 ] ||
    [ $trace -eq 1 ]; then
    usage_error "--resume takes the run's own settings (run.json); give only --timeout," \
      "--commit, --build-dir, --from-bundle, --verbose"
  fi
  [ -f "$resume/run.json" ] || usage_error "--resume: '$resume' is not a run folder (no run.json)"
  resume_suite=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("suite",
"conv"))' "$resume/run.json" 2>/dev/null) || usage_error "--resume: cannot read '$resume/run.json'"
  [[ "$resume_suite" =~ ^(conv|ops|mlp|transformer)$ ]] ||
    usage_error "--resume: '$resume' holds a run of an unknown suite '$resume_suite'"
  suites=("$resume_suite")
  run_dirs=("$(cd "$resume" && pwd)")
  labels=("")
else
  suite=${suite:-conv}
  suites=(conv ops)  # all: conv and ops, not mlp (its backends' names differ; see docs/mymlp.md)
  [ "$suite" = all ] || suites=("$suite")
fi
for s in "${suites[@]}"; do
  bin=$(prebuilt_of "$s")
  if [ -n "$bin" ] && [ ! -x "$bin" ]; then
    usage_error "$(bin_var_of "$s"): '$bin' is not an" \
      "executable"
  fi
done
# A build folder configured for another source tree (a checkout moved with its build/) would build
# that tree's sources: refused before anything is made, both trees named (fix: --build-dir).
needs_build=0
for s in "${suites[@]}"; do [ -n "$(prebuilt_of "$s")" ] || needs_build=1; done
if [ $needs_build -eq 1 ] && [ -f "$build_dir/CMakeCache.txt" ]; then
  cached_tree=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build_dir/CMakeCache.txt" | head -n 1)
  here=$(cd "$MYCONV_ROOT" && pwd -P)
  there=$(cd "$cached_tree" 2>/dev/null && pwd -P || echo "$cached_tree")
  if [ "$there" != "$here" ]; then
    echo "$prog: error: build folder '$build_dir' is configured for the source tree" \
      "'$cached_tree', not this one ('$here'); remove it or give --build-dir NEW_FOLDER" >&2
    exit 2
  fi
fi
if [ -z "$resume" ]; then
  if [ "$suite" = ops ] || [ "$suite" = mlp ] || [ "$suite" = transformer ]; then
    :  # the op, MLP and transformer suites' grids: below
  elif [ ${#shapes[@]} -gt 0 ]; then
    [ -z "$preset" ] || usage_error "give --preset or --shapes, not both"
    for s in "${shapes[@]}"; do
      readable_file "$s" || usage_error "--shapes: cannot read '$s' (not a readable file)"
    done
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
  # The op suite's grid: the size classes but xlarge, or op lists; fp32, bf16 (--quick: small fp32).
  ops_grid=()
  if [ ${#ops_files[@]} -gt 0 ]; then
    for f in "${ops_files[@]}"; do
      ops_grid+=("--ops-file" "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
    done
    ops_label="ops files $(for f in "${ops_files[@]}"; do basename "$f"; done | paste -sd, -)"
  else
    [ -n "$sizes" ] || { [ $quick -eq 1 ] && sizes=small || sizes=all; }
    ops_grid+=("--size" "$sizes")
    ops_label="ops sizes $sizes"
  fi
  ops_dtypes=${dtypes:-$([ $quick -eq 1 ] && echo fp32 || echo fp32,bf16)}
  ops_grid+=("--dtype" "$ops_dtypes")
  [ -z "$categories" ] || {
    ops_grid+=("--category" "$categories")
    ops_label+=" categories $categories"
  }
  [ -z "$ops" ] || { ops_grid+=("--op" "$ops"); ops_label+=" ops $ops"; }
  # The MLP suite's grid: the lecture's example, the four scaling studies, the matmul dims, fp32
  # and bf16 (profiles into RUN/profile: runner_of); --quick: a tiny example, base, matmul, fp32.
  mlp_dtypes=${dtypes:-$([ $quick -eq 1 ] && echo fp32 || echo fp32,bf16)}
  if [ $quick -eq 1 ]; then
    mlp_grid=(--dim 16 --num-layers 2 --batch-size 8 --num-steps 2 --scale all
      --base dim=16,num_layers=2,batch_size=8,num_steps=1 --matmul --matmul-dims 32,64
      --dtype "$mlp_dtypes")
    mlp_label="mlp quick"
  else
    mlp_grid=(--example --problem mlp:d4096l8b4096s5 --scale all --matmul --dtype "$mlp_dtypes")
    mlp_label="mlp example, d4096, scaling studies, matmul"
  fi
  # The transformer suite's grid: the models at one preset, device and dtype, sent to every
  # invocation; --quick: two tiny random models (GPT-2 and Qwen2 layouts), preset quick_test.
  tf_presets="$MYCONV_ROOT/experiments/transformer/presets.json"
  if [ "$suite" = transformer ]; then
    tf_preset=${preset:-$([ $quick -eq 1 ] && echo quick_test || echo small_scale)}
    known=$(python3 -c 'import json, sys
print(" ".join(k for k in json.load(open(sys.argv[1])) if not k.startswith("_")))' \
      "$tf_presets") || usage_error "--preset: cannot read '$tf_presets'"
    [ "$tf_preset" != list ] || { echo "presets: $known"; exit 0; }
    [[ " $known " == *" $tf_preset "* ]] ||
      usage_error "--preset: expected one of $known; got '$tf_preset'"
    tiny="$MYCONV_ROOT/experiments/transformer/configs"
    tf_models=${models:-$([ $quick -eq 1 ] && echo "$tiny/tiny-gpt2.json,$tiny/tiny-qwen2.json" ||
      echo gpt2,qwen2-0.5b,llama-3.2-1b)}
    tf_args=(--model "$tf_models" --preset "$tf_preset" --device "${device:-auto}")
    [ -z "$dtypes" ] || tf_args+=(--dtype "$dtypes")
    tf_label="transformer $(echo "$tf_models" | tr ',' '\n' | xargs -n1 basename |
      paste -sd, -) preset $tf_preset"
  fi
  default_out=$MYCONV_ROOT/results
  [ -z "$MYCONV_INSTALLED_BIN" ] || default_out=$PWD/results  # an install tree is not for results
  out_root=${out_root:-$default_out}
  mkdir -p "$out_root" 2>/dev/null || usage_error "--output-dir: cannot create '$out_root'"
  stamp="$(date -u +%Y%m%d_%H%M%S)_$(hostname -s 2>/dev/null || hostname)"
  run_dirs=() labels=()
  for s in "${suites[@]}"; do
    base="$(cd "$out_root" && pwd)/$stamp"
    [ "$s" = conv ] || base+="_$s"
    [ -z "$shard" ] || base+="_shard${shard%/*}of${shard#*/}"
    run_dir=$base
    n=1
    while ! mkdir "$run_dir" 2>/dev/null; do  # two runs in one second get _2, _3, ...
      n=$((n + 1))
      run_dir="${base}_$n"
      [ $n -lt 100 ] || usage_error "cannot create a run folder in '$out_root'"
    done
    run_dirs+=("$run_dir")
    case "$s" in
      ops) labels+=("$ops_label") ;;
      mlp) labels+=("$mlp_label") ;;
      transformer) labels+=("$tf_label") ;;
      *) labels+=("$label") ;;
    esac
  done
fi
log="${run_dirs[0]}/all_experiments.txt"

# ---- set-up and build: their output goes to the log only ------------------------------------
targets=() bins=()
for s in "${suites[@]}"; do
  program=$(program_of "$s")
  if [ -n "$(prebuilt_of "$s")" ]; then
    bins+=("$(prebuilt_of "$s")")
  else
    targets+=("$program")
    bins+=("$build_dir/experiments/$program")
  fi
done
for s in "${suites[@]}"; do
  [ -z "$(prebuilt_of "$s")" ] ||
    echo "[$(program_of "$s")] $(bin_var_of "$s")=$(prebuilt_of "$s"):" \
      "no set-up, no build" >>"$log"
done
# step WHAT COMMAND...: one set-up or build step, its output in the log only; a failure stops the
# script with the log's last lines (`set -e` does not reach into a `{ ...; } >>log || ...` list).
step() {
  local what=$1 rc=0
  shift
  "$@" >>"$log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    echo "$prog: error: $what failed (exit status $rc); the last lines of $log:" >&2
    tail -n 15 "$log" >&2
    exit 1
  fi
}
if [ ${#targets[@]} -gt 0 ]; then
  myconv_log "set-up and build of ${targets[*]} in $build_dir (output in $log)"
  echo "== set-up and build, $(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$log"
  if [ -n "$bundle" ]; then
    step "set-up (scripts/setup.sh --from-bundle)" "$MYCONV_ROOT/scripts/setup.sh" --from-bundle "$bundle"
  elif [ ! -d "$MYCONV_PREFIX/usr" ]; then
    step "set-up (scripts/setup.sh)" "$MYCONV_ROOT/scripts/setup.sh"  # quick when all is installed
  fi
  mapfile -t args < <(myconv_cmake_args)
  step "configure (cmake)" cmake -S "$MYCONV_ROOT" -B "$build_dir" "${args[@]}"
  step "build (cmake --build)" cmake --build "$build_dir" -j "$(myconv_jobs)" --target "${targets[@]}"
fi
for d in "${run_dirs[@]:1}"; do  # the other suites' logs start with the same set-up and build
  cat "$log" >>"$d/all_experiments.txt"
done

# runner_of INDEX [--prepare-only|--prepared]: the runner's command line for suite INDEX, in
# `runner`: a new run (listing, then running; or listing only), a folder listed before, or --resume.
runner_of() {
  local i=$1 mode=${2:-} s=${suites[$1]} f
  runner=(python3 "$MYCONV_ROOT/scripts/runner/run_cases.py" --run-dir "${run_dirs[$i]}"
    --myconv "${bins[$i]}")
  [ -z "$timeout" ] || runner+=(--timeout "$timeout")
  [ $commit -eq 0 ] || runner+=(--commit)
  [ $verbose -eq 0 ] || runner+=(--verbose)
  if [ -n "$resume" ] || [ "$mode" = --prepared ]; then
    runner+=("${mode:---resume}")
    return
  fi
  runner+=(--fresh --label "${labels[$i]}")
  [ -z "$mode" ] || runner+=("$mode")
  [ -z "$shard" ] || runner+=(--shard "$shard")
  [ -z "$gpus" ] || runner+=(--gpus "$gpus")
  [ -z "$cost_from" ] || runner+=(--cost-from "$(cd "$(dirname "$cost_from")" && pwd)/$(basename "$cost_from")")
  [ $plan -eq 0 ] || runner+=(--plan)
  [ $isolate -eq 0 ] || runner+=(--isolate)
  [ "$s" = conv ] || runner+=(--suite "$s")
  [ $quick -eq 0 ] || runner+=(--quick)
  if [ $trust_check -eq 1 ] && [[ "$s" =~ ^(conv|ops)$ ]]; then runner+=(--trust-check); fi
  if [ $inductor_reference -eq 1 ] && [ "$s" = conv ]; then runner+=(--inductor-reference); fi
  [ $trace -eq 0 ] || runner+=(--trace)
  if [ "$s" = ops ]; then
    for f in "${ops_grid[@]}"; do runner+=("--grid-arg=$f"); done
    [ -z "$backends" ] || runner+=("--grid-arg=--backend" "--grid-arg=$backends")
  elif [ "$s" = mlp ]; then
    for f in "${mlp_grid[@]}"; do runner+=("--grid-arg=$f"); done
    [ -z "$backends" ] || runner+=("--grid-arg=--backend" "--grid-arg=$backends")
    runner+=("--extra-arg=--profile" "--extra-arg=${run_dirs[$i]}/profile")
    [ $quick -eq 0 ] || runner+=("--extra-arg=--no-ceiling" "--extra-arg=--phase-steps" "--extra-arg=2")
  elif [ "$s" = transformer ]; then
    for f in "${tf_args[@]}"; do runner+=("--extra-arg=$f"); done
    [ -z "$backends" ] || runner+=("--grid-arg=--backend" "--grid-arg=$backends")
    [ $hf_reference -eq 0 ] || runner+=(--hf-reference)
  else
    for f in "${shapes[@]}"; do
      runner+=("--grid-arg=--shapes" "--grid-arg=$(cd "$(dirname "$f")" && pwd)/$(basename "$f")")
    done
    [ -z "$backends" ] || runner+=("--grid-arg=--backend" "--grid-arg=$backends")
    [ -z "$dtypes" ] || runner+=("--grid-arg=--dtype" "--grid-arg=$dtypes")
    [ -z "$layouts" ] || runner+=("--grid-arg=--layout" "--grid-arg=$layouts")
  fi
  for f in "${extra[@]}"; do runner+=("--extra-arg=$f"); done
}

# The MLP suite's Python reference (scripts/references/mlp_reference.py) on the grid's example in
# its dtypes, on the GPU where Python's torch sees one, into RUN/references/python_reference.json
# before the cases: the report holds libtorch_cpu/libtorch_cuda to it. Skipped (the log says why)
# where python3 has no torch.
python_reference() {
  local run_dir=$1 bin=$2 device ref_log=$1/all_experiments.txt
  local ref=(--config mlp:d128l16b128s5)
  [ $quick -eq 0 ] || ref=(--config mlp:d16l2b8s2 --num_trials 5)
  if ! device=$(python3 -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")' \
    2>/dev/null); then
    echo "[mymlp] Python reference skipped: python3 has no torch"
    echo "[mymlp] Python reference skipped: python3 has no torch" >>"$ref_log"
    return 0
  fi
  [ "$device" = cpu ] || ref+=(--graph)
  mkdir -p "$run_dir/references"
  echo "[mymlp] Python reference (scripts/references/mlp_reference.py, $device) into $run_dir/references/"
  {
    echo "== Python reference, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    python3 "$MYCONV_ROOT/scripts/references/mlp_reference.py" "${ref[@]}" --dtype "$mlp_dtypes" \
      --device "$device" --mymlp "$bin" --json "$run_dir/references/python_reference.json"
  } >>"$ref_log" 2>&1 || echo "[mymlp] Python reference failed (see $ref_log); the cases go on"
}
if [ -z "$resume" ] && [ $plan -eq 0 ]; then
  for i in "${!suites[@]}"; do
    [ "${suites[$i]}" != mlp ] || python_reference "${run_dirs[$i]}" "${bins[$i]}"
  done
fi

if [ $plan -eq 1 ]; then  # the runner lists the cases and removes the folders it was given
  for i in "${!suites[@]}"; do
    runner_of "$i"
    "${runner[@]}" || exit $?
  done
  exit 0
fi
if [ ${#suites[@]} -eq 1 ]; then
  runner_of 0
  # exec: the runner gets this PID, so `kill PID` and Ctrl-C reach it (it stops the program,
  # keeps the finished cases and says how to resume).
  exec "${runner[@]}"
fi

# Several suites: every suite's cases are listed first (bad options fail before anything runs),
# then the suites run one after the other; a signal to this script goes on to the running one.
for i in "${!suites[@]}"; do
  runner_of "$i" --prepare-only
  rc=0
  "${runner[@]}" || rc=$?
  if [ $rc -ne 0 ]; then
    rm -rf "${run_dirs[@]}"  # folders this command made, holding nothing but the build log
    exit $rc
  fi
done
child=""
trap '[ -z "$child" ] || kill -TERM "$child" 2>/dev/null' TERM HUP
trap '[ -z "$child" ] || kill -INT "$child" 2>/dev/null' INT
status=0
for i in "${!suites[@]}"; do
  runner_of "$i" --prepared
  "${runner[@]}" &
  child=$!
  rc=0
  wait "$child" || rc=$?
  while kill -0 "$child" 2>/dev/null; do  # wait returned for a trapped signal: wait again
    rc=0
    wait "$child" || rc=$?
  done
  child=""
  [ $status -ne 0 ] || status=$rc
  if [ $rc -ge 128 ]; then  # stopped: the next suites do not start
    for d in "${run_dirs[@]:$((i + 1))}"; do
      myconv_log "not started: $d (run it with: scripts/run_all_experiments.sh --resume $d)"
    done
    exit $rc
  fi
done
exit $status
