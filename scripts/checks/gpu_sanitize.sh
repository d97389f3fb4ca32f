#!/usr/bin/env bash
# Runs our own CUDA kernels under compute-sanitizer's four tools (memcheck, racecheck, initcheck,
# synccheck) on a GPU host: the kernel tests that launch every variant, tile, dtype and layout on
# their randomized problem sets (tests/conv/test_im2col_gemm_cuda.cpp,
# tests/conv/test_small_conv.cpp, tests/conv/test_depthwise_cuda.cpp), myconv over a randomized
# problem set per variant (variant 8 over a randomized depthwise set), and (where myops is built)
# our op kernels (own_cuda, ops/cuda/) in each variant over a randomized op set (every op, odd
# sizes, broadcasts, axis sets, permutations) in fp32, fp16 and bf16 (tf32 too for matmul). One log
# per tool and program in OUT_DIR, and a summary (errors per tool) last; exit 1 when any tool
# reports an error.
#
#   scripts/checks/gpu_sanitize.sh --build-dir DIR [--out-dir OUT_DIR] [--tools LIST] [--problems N]
#                           [--test-problems N]
#     --build-dir DIR   a CUDA build of this tree (scripts/test.sh or run_all_experiments.sh made it)
#     --out-dir DIR     where the logs go (default DIR/compute-sanitizer)
#     --tools LIST      default memcheck,racecheck,initcheck,synccheck
#     --problems N      myconv's randomized problems per variant (default 8)
#     --test-problems N the kernel tests' first N problems (default all; racecheck is slow)
#     --only REGEX      only the runs whose name matches (e.g. 'wgmma|variant(9|10)$')
# MYCONV_SANITIZE_TIMEOUT (seconds, default 900) bounds each run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

build_dir="" out_dir="" tools=memcheck,racecheck,initcheck,synccheck problems_n=8 test_problems=0
only=
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir | --out-dir | --tools | --problems | --test-problems | --only)
      [ $# -ge 2 ] || { echo "gpu_sanitize.sh: error: $1 needs a value" >&2; exit 2; }
      case "$1" in
        --build-dir) build_dir=$2 ;; --out-dir) out_dir=$2 ;; --tools) tools=$2 ;;
        --problems) problems_n=$2 ;; --test-problems) test_problems=$2 ;; --only) only=$2 ;;
      esac
      shift 2 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_sanitize.sh: error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$build_dir" ] || { echo "gpu_sanitize.sh: error: --build-dir is required" >&2; exit 2; }
for t in test_im2col_gemm_cuda test_small_conv test_depthwise_cuda test_wgmma_conv; do
  [ -x "$build_dir/tests/$t" ] ||
    { echo "gpu_sanitize.sh: error: $build_dir/tests/$t not built (a CUDA build with tests)" >&2; exit 2; }
done
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "gpu_sanitize.sh: error: compute-sanitizer not found" >&2; exit 2; }
out_dir=${out_dir:-$build_dir/compute-sanitizer}
mkdir -p "$out_dir"

# A randomized problem set for myconv (fixed seed): every variant on small odd problems with
# groups, strides, dilation and padding, in every dtype it takes. Variants 1-3 are FP32, 4-6
# tensor cores (tf32, fp16, bf16), 7 the direct small-OC kernel (any dtype); 8, the depthwise
# kernel (any dtype), on depthwise problems (groups = input channels, multiplier 1-4, kernels up
# to 7, strides 1-3, dilations 1-3); 10 on one-group problems of 64 or 128 input channels; 12
# (Winograd, fp32/tf32) on 3x3 stride-1 one-group problems with padding 0-2.
problems="$out_dir/problems.txt"
depthwise_problems="$out_dir/depthwise_problems.txt"
wgmma_problems="$out_dir/wgmma_problems.txt"
winograd_problems="$out_dir/winograd_problems.txt"
python3 - "$problems" "$problems_n" "$depthwise_problems" "$wgmma_problems" "$winograd_problems" <<'PY'
import random, sys
rng = random.Random(20261123)
lines = []
while len(lines) < int(sys.argv[2]):
    g = rng.choice([1, 1, 2, 3])
    ic, oc = g * rng.randint(1, 9), g * rng.randint(1, 40)
    ih, iw = rng.randint(5, 23), rng.randint(5, 23)
    kh, kw = rng.randint(1, 4), rng.randint(1, 4)
    sh, sw, dh, dw = rng.randint(1, 3), rng.randint(1, 3), rng.randint(0, 1), rng.randint(0, 1)
    ph, pw = rng.randint(0, kh - 1), rng.randint(0, kw - 1)
    if (kh - 1) * (dh + 1) + 1 > ih + 2 * ph or (kw - 1) * (dw + 1) + 1 > iw + 2 * pw:
        continue
    lines.append(f"g{g}mb{rng.randint(1, 3)}ic{ic}ih{ih}iw{iw}oc{oc}kh{kh}kw{kw}sh{sh}sw{sw}"
                 f"ph{ph}pw{pw}dh{dh}dw{dw}")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
rng = random.Random(20261125)  # the depthwise set
dw_lines = []
while len(dw_lines) < int(sys.argv[2]):
    g, m = rng.randint(1, 40), rng.randint(1, 4)
    ih, iw = rng.randint(1, 23), rng.randint(1, 23)
    kh, kw = rng.randint(1, 7), rng.randint(1, 7)
    sh, sw, dh, dw = rng.randint(1, 3), rng.randint(1, 3), rng.randint(0, 2), rng.randint(0, 2)
    ph, pw = rng.randint(0, kh - 1), rng.randint(0, kw - 1)
    if (kh - 1) * (dh + 1) + 1 > ih + 2 * ph or (kw - 1) * (dw + 1) + 1 > iw + 2 * pw:
        continue
    dw_lines.append(f"g{g}mb{rng.randint(1, 3)}ic{g}ih{ih}iw{iw}oc{g * m}kh{kh}kw{kw}sh{sh}sw{sw}"
                    f"ph{ph}pw{pw}dh{dh}dw{dw}")
open(sys.argv[3], "w").write("\n".join(dw_lines) + "\n")
rng = random.Random(20261126)  # variant 10's set: one group, 64 or 128 input channels
wg_lines = []
while len(wg_lines) < int(sys.argv[2]):
    ic, oc = rng.choice([64, 128]), rng.randint(1, 200)
    ih, iw = rng.randint(3, 20), rng.randint(3, 20)
    kh, kw = rng.randint(1, 5), rng.randint(1, 5)
    sh, sw, dh, dw = rng.randint(1, 3), rng.randint(1, 3), rng.randint(0, 1), rng.randint(0, 1)
    ph, pw = rng.randint(0, kh - 1), rng.randint(0, kw - 1)
    if (kh - 1) * (dh + 1) + 1 > ih + 2 * ph or (kw - 1) * (dw + 1) + 1 > iw + 2 * pw:
        continue
    wg_lines.append(f"mb{rng.randint(1, 3)}ic{ic}ih{ih}iw{iw}oc{oc}kh{kh}kw{kw}sh{sh}sw{sw}"
                    f"ph{ph}pw{pw}dh{dh}dw{dw}")
open(sys.argv[4], "w").write("\n".join(wg_lines) + "\n")
rng = random.Random(20261127)  # variant 12's set: 3x3, stride 1, one group, padding 0-2
wi_lines = []
while len(wi_lines) < int(sys.argv[2]):
    ih, iw, ph, pw = rng.randint(1, 23), rng.randint(1, 23), rng.randint(0, 2), rng.randint(0, 2)
    if ih + 2 * ph < 3 or iw + 2 * pw < 3:
        continue
    wi_lines.append(f"mb{rng.randint(1, 3)}ic{rng.randint(1, 40)}ih{ih}iw{iw}oc{rng.randint(1, 40)}"
                    f"kh3kw3ph{ph}pw{pw}")
open(sys.argv[5], "w").write("\n".join(wi_lines) + "\n")
PY

# A randomized op set for myops (fixed seed): each op twice, odd sizes, broadcasts, axis sets.
ops_problems="$out_dir/ops_problems.txt"
python3 - "$ops_problems" <<'PY'
import random, sys
rng = random.Random(20261124)
dims = [1, 3, 7, 33, 129, 1000]
def shape(rank):
    return [rng.choice(dims) for _ in range(rank)]
def text(s):
    return "x".join(map(str, s))
lines = []
for _ in range(2):
    s = shape(rng.randint(2, 3))
    r = [d if rng.random() < 0.5 else 1 for d in s]
    for op in ("add", "sub", "mul", "div"):
        lines.append(f"{op}:{text(s)}" + (f"+{text(r)}" if r != s else ""))
    for op in ("relu", "sigmoid", "tanh", "gelu_erf", "gelu_tanh", "silu", "softmax", "layernorm",
               "rmsnorm", "copy", "transpose"):
        lines.append(f"{op}:{text(shape(rng.randint(2, 3)))}")
    for op in ("sum", "mean", "max"):
        s = shape(3)
        axes = sorted(rng.sample(range(3), rng.randint(1, 2)))
        lines.append(f"{op}:{text(s)}:axis=" + ",".join(map(str, axes)))
        lines.append(f"{op}:{text(s)}")
    s = shape(3)
    perm = list(range(3))
    rng.shuffle(perm)
    lines.append(f"permute:{text(s)}:perm=" + ",".join(map(str, perm)))
    lines.append(f"concat:{text(shape(2))}:inputs={rng.randint(2, 5)}:axis={rng.randint(0, 1)}")
    lines.append(f"matmul:b{rng.randint(1, 3)}m{rng.choice(dims[:5])}n{rng.choice(dims[:5])}"
                 f"k{rng.choice(dims[:5])}")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY

# The kernel tests take their first N problems (tests/conv/random_problems.hpp).
[ "$test_problems" = 0 ] || export MYCONV_TEST_PROBLEMS=$test_problems
quick=(--warmup 0 --min-iters 1 --max-iters 1 --min-time-ms 0 --max-time-ms 1 --strict)
status=0
summary=""
IFS=, read -r -a tool_list <<<"$tools"
for tool in "${tool_list[@]}"; do
  runs=(
    "kernels_im2col:$build_dir/tests/test_im2col_gemm_cuda --gtest_filter=Im2colGemmCuda.*VariantsEvery*"
    "kernels_small_conv:$build_dir/tests/test_small_conv --gtest_filter=SmallConvCuda.MatchesTheReferenceInEveryConfiguration"
    "kernels_depthwise:$build_dir/tests/test_depthwise_cuda --gtest_filter=DepthwiseCuda.MatchesTheReferenceInEveryConfiguration"
    "kernels_wgmma:$build_dir/tests/test_wgmma_conv --gtest_filter=WgmmaConv.*"
  )
  for v in 1 2 3; do
    runs+=("myconv_variant$v:$build_dir/experiments/myconv --backend im2col_gemm_cuda --variant $v --shapes $problems --dtype fp32 --layout nchw,nhwc")
  done
  for v in 4 5 6; do
    runs+=("myconv_variant$v:$build_dir/experiments/myconv --backend im2col_gemm_cuda --variant $v --shapes $problems --dtype tf32,fp16,bf16 --layout nchw,nhwc")
  done
  runs+=("myconv_variant7:$build_dir/experiments/myconv --backend im2col_gemm_cuda --variant 7 --shapes $problems --dtype fp32,fp16,bf16 --layout nchw,nhwc")
  runs+=("myconv_variant8:$build_dir/experiments/myconv --backend im2col_gemm_cuda --variant 8 --shapes $depthwise_problems --dtype fp32,tf32,fp16,bf16 --layout nchw,nhwc")
  # Variant 9 (our im2col kernel, then cuBLASLt's GEMM) and variant 10 (Hopper only; elsewhere
  # every case is unsupported, which --strict lets pass).
  runs+=("myconv_variant9:$build_dir/experiments/myconv --backend im2col_gemm_cuda --variant 9 --shapes $problems --dtype fp32,tf32,fp16,bf16 --layout nchw,nhwc")
  runs+=("myconv_variant10:$build_dir/experiments/myconv --backend im2col_gemm_cuda --variant 10 --shapes $wgmma_problems --dtype tf32,fp16,bf16 --layout nchw,nhwc")
  for v in 12.1 12.2; do
    runs+=("myconv_variant$v:$build_dir/experiments/myconv --backend im2col_gemm_cuda --variant $v --shapes $winograd_problems --dtype fp32,tf32 --layout nchw,nhwc")
  done
  if [ -x "$build_dir/experiments/myops" ]; then
    # A variant an op does not have is unsupported (no launch); --strict fails a wrong answer.
    for v in 1 2 3 4 11 12 13 14 15 16 17 18 19 20; do  # 11-20: the fp32 SGEMMs and 3xTF32
      runs+=("myops_variant$v:$build_dir/experiments/myops --no-peaks --backend own_cuda --variant $v --ops-file $ops_problems --dtype fp32,fp16,bf16,tf32")
    done
  fi
  for r in "${runs[@]}"; do
    name=${r%%:*}
    cmd=${r#*:}
    [ -z "$only" ] || [[ "$name" =~ $only ]] || continue
    log="$out_dir/${tool}_${name}.log"
    extra=()
    [[ "$name" == myconv_* || "$name" == myops_* ]] && extra=("${quick[@]}")
    # --error-exitcode: a report fails the run even when the program itself passes.
    # shellcheck disable=SC2086
    set +e
    timeout "${MYCONV_SANITIZE_TIMEOUT:-900}" "$sanitizer" --tool "$tool" --error-exitcode 99 \
      --print-limit 50 $cmd "${extra[@]}" >"$log" 2>&1
    rc=$?
    set -e
    # memcheck, initcheck, synccheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY:
    # N hazards displayed (E errors, W warnings)".
    errors=$(sed -n -e 's/^========= ERROR SUMMARY: \([0-9]*\) error.*/\1/p' \
      -e 's/^========= RACECHECK SUMMARY: .*(\([0-9]*\) errors, \([0-9]*\) warnings).*/\1/p' \
      "$log" | tail -n 1)
    line="$tool $name: exit $rc$([ "$rc" -ne 124 ] || echo ' (timed out)'), ${errors:-?} error(s)"
    summary+="$line"$'\n'
    echo "[gpu_sanitize] $line"
    if [ "$rc" -ne 0 ] || [ "${errors:-1}" != 0 ]; then status=1; fi
  done
done
printf '%s' "$summary" >"$out_dir/summary.txt"
echo "[gpu_sanitize] logs in $out_dir; $(grep -c ', 0 error' "$out_dir/summary.txt") of $(wc -l <"$out_dir/summary.txt") runs clean"
exit $status
