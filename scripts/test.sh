#!/usr/bin/env bash
# Builds myconv and runs every test (ctest), the bundle and install check
# (scripts/checks/check_bundle_install.sh), then the sanitizer job (scripts/checks/sanitize.sh: the
# CPU path under AddressSanitizer + UndefinedBehaviorSanitizer). Does the set-up first when
# something is missing. GPU tests skip, with a reason, where no GPU is present.
#
#   scripts/test.sh [--from-bundle DIR] [--build-dir DIR] [--no-sanitize] [-- extra cmake arguments]
#   e.g. scripts/test.sh -- -DCMAKE_CUDA_ARCHITECTURES=90
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build_dir="$MYCONV_ROOT/build"
bundle=""
sanitize=1
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --from-bundle) bundle=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    --no-sanitize) sanitize=0; shift ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# Each stage says how long it took (CI's limit is on the sum).
stage() {  # stage NAME COMMAND...
  local name=$1 t0=$SECONDS rc=0
  shift
  "$@" || rc=$?
  myconv_log "stage $name: $((SECONDS - t0)) s (exit $rc)"
  return $rc
}

if [ -n "$bundle" ]; then
  stage setup "$MYCONV_ROOT/scripts/setup.sh" --from-bundle "$bundle"
elif [ ! -d "$MYCONV_PREFIX/usr" ]; then
  stage setup "$MYCONV_ROOT/scripts/setup.sh" --tests  # quick when everything is installed
fi

# Where no GPU is found the CUDA code is only compiled, never run: to PTX for one architecture
# (90-virtual: the H100/H200 the GPU runs use) instead of machine code for the shipping default's
# three. cicc still checks every kernel's C++ and emits its PTX; ptxas (half of a CUDA file's
# build time here) runs in the GPU host's build, which assembles the same PTX before anything runs.
if [ -z "${CUDAARCHS:-}" ] && [ -z "$(myconv_local_cuda_archs)" ]; then export CUDAARCHS=90-virtual; fi
mapfile -t args < <(myconv_cmake_args)
# Unity batches (CMakeLists.txt, MYCONV_UNITY): less CPU time for a build from scratch.
stage configure cmake -S "$MYCONV_ROOT" -B "$build_dir" "${args[@]}" -DMYCONV_WERROR=ON \
  -DMYCONV_UNITY=ON "${extra[@]}"
stage build cmake --build "$build_dir" -j "$(myconv_jobs)"
# One test more than cores: the runner, Slurm and ssh tests spend much of their time waiting on
# processes they started (time limits, daemons), and the extra slot keeps the cores busy then.
stage ctest ctest --test-dir "$build_dir" --output-on-failure -j "$(( $(myconv_jobs) + 1 ))"
# Programs built against a bundle prefix start bare (env -i) and install (cmake --install); 77:
# skipped, with the reason, where no bundle can be had.
bundle_check() { "$MYCONV_ROOT/scripts/checks/check_bundle_install.sh" || [ $? -eq 77 ]; }
stage bundle_check bundle_check
[ $sanitize -eq 0 ] || stage sanitize "$MYCONV_ROOT/scripts/checks/sanitize.sh"
myconv_log "scripts/test.sh: $SECONDS s in all"
