#!/usr/bin/env bash
# The sanitizer job: builds the CPU path with AddressSanitizer + UndefinedBehaviorSanitizer (leak
# checks on) in its own folder, proves the sanitizers stop a program
# (tests/build/sanitizer_canary.cpp), runs the unit tests of our CPU code, the parser and
# command-line fuzzers, and a myconv sweep of the tails shape set through every CPU backend under
# them. Any sanitizer report fails the job. scripts/test.sh runs it after the main tests (CI); GPU
# code is checked by compute-sanitizer on a GPU host instead (scripts/checks/gpu_sanitize.sh).
#
#   scripts/checks/sanitize.sh [--build-dir DIR] [--full]
#     --build-dir DIR   build folder (default build-sanitize/)
#     --full            every target and every test, the slow ones too (Halide's autoschedulers,
#                       the runner scripts)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

build_dir="$MYCONV_ROOT/build-sanitize"
full=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) [ $# -ge 2 ] || { echo "sanitize.sh: error: --build-dir needs a folder" >&2; exit 2; }
      build_dir=$2; shift 2 ;;
    --full) full=1; shift ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "sanitize.sh: error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

myconv_setup_done || "$MYCONV_ROOT/scripts/setup.sh" --tests
mapfile -t args < <(myconv_cmake_args)
# -O0 -g1: no optimization (every access instrumented as written; 40% less build time than -O1
# here, where the instrumented JSON and CLI11 templates dominate), line tables for the reports'
# stack traces.
cmake -S "$MYCONV_ROOT" -B "$build_dir" "${args[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O0 -g1" \
  -DMYCONV_WITH_CUDA=OFF -DMYCONV_WITH_TORCH=ON -DMYCONV_SANITIZE=address,undefined \
  -DMYCONV_WERROR=ON -DMYCONV_UNITY=ON >/dev/null
# What is built and run (all of it with --full): the programs whose command lines are fuzzed
# (myconv, myops, mymlp, mytransformer) and the test programs of our own CPU code: the core, the
# conv and op problems and data, the parsers, the CPU backends through the case runner, oneDNN's
# glue. Left out: the index-math and kernel-emulation tests (arithmetic the main tests check),
# the Halide tests (Halide's own, uninstrumented JIT; halide_cpu still runs here through
# test_backends_cpu and the tails sweep), the GPU-only test programs and core_overhead.
targets=(myconv myops mymlp mytransformer sanitizer_canary test_core test_conv test_ops
         test_ops_backends test_parsers_fuzz test_backends_cpu test_mlp test_onednn_cpu
         test_ops_onednn_cpu)
if [ $full -eq 0 ] && command -v ninja >/dev/null 2>&1 && [ -f "$build_dir/build.ninja" ]; then
  known=$(ninja -C "$build_dir" -t targets all)
  built=()
  for t in "${targets[@]}"; do  # those this configuration has (oneDNN's where it was found)
    if grep -q "^$t:" <<<"$known"; then built+=("$t"); fi
  done
  cmake --build "$build_dir" -j "$(myconv_jobs)" --target "${built[@]}"
else
  cmake --build "$build_dir" -j "$(myconv_jobs)"
fi

# Every error stops the program with a non-zero status (the build adds -fno-sanitize-recover);
# leaks are errors too.
# intercept_tls_get_addr=0: the programs load oneDNN (and its OpenMP runtime) from a module with
# dlopen, so its worker threads' thread-locals are dynamic TLS; LeakSanitizer's tracking of those
# blocks (through __tls_get_addr) reads a bogus range at exit and its tracer dies with SIGSEGV
# ("LeakSanitizer has encountered a fatal error") after every test passed. Without the
# interception the leak check still runs, over the static TLS and every thread's stack.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1:intercept_tls_get_addr=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The command-line fuzzer's runs take seconds each here (every one loads the libraries): fewer
# random ones, and the hostile classes whose check is core/'s in myconv only (each program's
# own classes in every program).
export MYCONV_FUZZ_RUNS=${MYCONV_FUZZ_RUNS:-5} MYCONV_FUZZ_CORE_ONCE=${MYCONV_FUZZ_CORE_ONCE:-1}
exclude='^$'
# Halide's autoscheduler test spends minutes inside Halide's own (uninstrumented) library; the
# runner-script, report, sweep and Slurm tests exercise Python and shell, not this build. The
# programs' command-line behaviour tests (*_cli) run in the main tests; here the command-line
# fuzzer (cli_fuzz) runs each program's grammar and hostile command lines under the sanitizers.
# Test programs left unbuilt show as NAME_NOT_BUILT; smoke_core_overhead runs core_overhead.
[ $full -eq 1 ] ||
  exclude='_NOT_BUILT|smoke_core_overhead|HalideCpu.AutoschedulersPassOrSayWhy|run_all_|remote_run|analyze_results|committed_reports|results_schema|ops_report|transformer_report|shard_split|slurm|myconv_cli|myops_cli|mymlp_cli|mytransformer_cli'
ctest --test-dir "$build_dir" --output-on-failure -j "$(myconv_jobs)" -E "$exclude"

# The tails set (odd sizes, dilation, strides, asymmetric kernels, groups) through every CPU
# backend, both layouts.
sweep="$build_dir/sweep_tails.json"
"$build_dir/experiments/myconv" --shapes "$MYCONV_ROOT/experiments/shapes/tails.txt" \
  --layout nchw,nhwc --warmup 0 --min-time-ms 0 --max-time-ms 5 --max-iters 3 \
  --json "$sweep" >"$build_dir/sweep_tails.txt" 2>&1 ||
  { tail -n 40 "$build_dir/sweep_tails.txt"; echo "sanitize.sh: error: the tails sweep failed" >&2; exit 1; }
python3 - "$sweep" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
bad = [f"{r['backend']} {r['problem']}: {r['status']} {r['reason']}" for r in rs
       if r["status"] in ("failed", "incorrect", "timeout")]
ran = sum(r["status"] == "passed" for r in rs)
print(f"[sanitize] sweep of tails: {len(rs)} cases, {ran} passed" +
      "".join(f"\n  {b}" for b in bad))
sys.exit(1 if bad or ran == 0 else 0)
PY
myconv_log "sanitizer job clean: $build_dir"
