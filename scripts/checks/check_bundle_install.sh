#!/usr/bin/env bash
# Checks that programs built against a bundle prefix (scripts/setup.sh --from-bundle, as on an
# offline GPU host) start as the README shows: under `env -i`, from another folder, with the
# prefix's libraries (Halide, LLVM and its libz3/libedit, oneDNN, the OpenCL loader) loaded from
# the prefix, not from the system; and that `cmake --install` gives a tree whose programs and
# scripts run from there with the build folder gone. scripts/test.sh runs it (CI). On this kind of
# machine the same libraries are also installed system-wide, so a program that started would
# prove nothing: the loader's own record (LD_DEBUG=libs) says where each library came from.
#
#   scripts/checks/check_bundle_install.sh [--work DIR] [--bundle DIR]
#     --work DIR     scratch folder (default build-bundle-check/): prefix, build, install, runs
#     --bundle DIR   the .debs (default WORK/bundle, downloaded once: scripts/offline/bundle_deps.sh)
# Exit codes: 0 passed; 1 a check failed; 2 bad options; 77 skipped (no bundle and no network).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

work="$MYCONV_ROOT/build-bundle-check" bundle=""
while [ $# -gt 0 ]; do
  case "$1" in
    --work | --bundle)
      [ $# -ge 2 ] || { echo "check_bundle_install.sh: error: $1 needs a folder" >&2; exit 2; }
      [ "$1" = --work ] && work=$2 || bundle=$2
      shift 2 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check_bundle_install.sh: error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$work"
work=$(cd "$work" && pwd)
log="$work/check.log"
: >"$log"
say() { echo "[check_bundle_install] $*" | tee -a "$log"; }
failed=0
check() {  # check DESCRIPTION COMMAND...: runs the command quietly, says ok or FAIL
  local what=$1
  shift
  if "$@" >>"$log" 2>&1; then say "ok: $what"; else say "FAIL: $what (see $log)"; failed=1; fi
}

if [ -z "$bundle" ]; then
  bundle="$work/bundle"
  if ! ls "$bundle"/*.deb >/dev/null 2>&1; then
    "$MYCONV_ROOT/scripts/offline/bundle_deps.sh" "$bundle" >>"$log" 2>&1 ||
      { echo "[check_bundle_install] skipped: no bundle in $bundle and bundle_deps.sh could not download one"; exit 77; }
  fi
fi

# A prefix of its own, so that the tree's other builds keep using the system's packages.
export MYCONV_PREFIX="$work/prefix"
"$MYCONV_ROOT/scripts/setup.sh" --from-bundle "$bundle" >>"$log" 2>&1
mapfile -t args < <(myconv_cmake_args)
# The bundle's libraries are what is checked: the build leaves out CUDA and LibTorch (neither comes
# from the bundle), so the programs built are myconv and myops.
say "building myconv against $MYCONV_PREFIX (CPU backends, no LibTorch)"
# -O1: what this checks is the prefix's packages (found, built against, loaded from the prefix,
# installed relocatably), not the code's speed; the heavy translation units build in half the time.
cmake -S "$MYCONV_ROOT" -B "$work/build" "${args[@]}" -DMYCONV_WITH_CUDA=OFF \
  -DMYCONV_WITH_TORCH=OFF -DMYCONV_BUILD_TESTS=OFF -DMYCONV_WERROR=ON -DMYCONV_UNITY=ON \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" >>"$log" 2>&1
cmake --build "$work/build" -j "$(myconv_jobs)" >>"$log" 2>&1

# loaded_from_prefix PROGRAM: every library of the backends' dependencies that the bundle provides
# (a bundle may leave oneDNN out) is loaded, and from the prefix.
loaded_from_prefix() {
  local program=$1 loaded lib path missing=0
  loaded=$(cd / && env -i LD_DEBUG=libs "$program" --list-backends 2>&1 >/dev/null |
    sed -n 's/.*calling init: //p' | sort -u)
  local libs=(libHalide14.so.0 libLLVM-14.so.1 libz3.so.4 libedit.so.2)
  # oneDNN and the OpenCL loader it needs, where the bundle has oneDNN.
  [ ! -e "$MYCONV_PREFIX/usr/lib/x86_64-linux-gnu/libdnnl.so.2" ] || libs+=(libdnnl.so.2 libOpenCL.so.1)
  for lib in "${libs[@]}"; do
    path=$(grep "/$lib\$" <<<"$loaded" | head -n 1)
    if [ -z "$path" ]; then
      echo "$program did not load $lib"; missing=1
    elif [[ "$(readlink -f "$path")" != "$(readlink -f "$MYCONV_PREFIX")"/* ]]; then
      echo "$program loaded $lib from $path, not from $MYCONV_PREFIX"; missing=1
    else
      echo "$lib <- $path"
    fi
  done
  return $missing
}
# starts_bare PROGRAM: runs under env -i from / and lists the CPU backends as available.
starts_bare() {
  local out
  out=$(cd / && env -i "$1" --list-backends) || return 1
  echo "$out"
  grep -Eq '^ *halide_cpu +cpu +yes +yes ' <<<"$out" || return 1
  [ ! -e "$MYCONV_PREFIX/usr/lib/x86_64-linux-gnu/libdnnl.so.2" ] ||
    grep -Eq '^ *onednn_cpu +cpu +yes +yes ' <<<"$out"
}

check "env -i build/experiments/myconv --list-backends, from /" starts_bare "$work/build/experiments/myconv"
check "the build's myconv loads the prefix's libraries from the prefix" \
  loaded_from_prefix "$work/build/experiments/myconv"

rm -rf "$work/install"
cmake --install "$work/build" --prefix "$work/install" >>"$log" 2>&1
inst="$work/install"
# The install must not lean on the build folder.
mv "$work/build" "$work/build.away"
trap 'mv "$work/build.away" "$work/build" 2>/dev/null || true' EXIT
check "env -i PREFIX/bin/myconv --list-backends, from /, the build folder gone" starts_bare "$inst/bin/myconv"
check "the installed myconv loads the prefix's libraries from the prefix" loaded_from_prefix "$inst/bin/myconv"
[ ! -e "$MYCONV_PREFIX/usr/lib/x86_64-linux-gnu/libdnnl.so.2" ] ||
  check "the installed myconv loads its oneDNN module from the install" \
  bash -c "cd / && env -i LD_DEBUG=libs '$inst/bin/myconv' --list-backends 2>&1 >/dev/null |
    grep -q 'calling init: $inst/.*/myconv/libmyconv_onednn.so'"
check "the installed shape sets: resnet50 lists its 6 problems" \
  bash -c "cd / && '$inst/bin/myconv' --shapes '$inst/share/myconv/experiments/shapes/resnet50.txt' \
    --backend halide_cpu --list-cases | grep -c '\"problem\"' | grep -qx 6"
check "the installed myops reads the installed op lists" \
  bash -c "cd / && env -i '$inst/bin/myops' --list-ops | grep -q '^op lists: $inst/bin/../share/myconv/experiments/ops\$' &&
    env -i '$inst/bin/myops' --size batched --backend onednn_cpu --list-cases | grep -q 'qwen2_lm_head'"
rm -rf "$work/runs"
mkdir -p "$work/runs"
check "PREFIX/bin/myconv-run-all --preset seed --quick writes a run folder under ./results" \
  bash -c "cd '$work/runs' && env -i PATH=/usr/bin:/bin '$inst/bin/myconv-run-all' --preset seed \
    --quick --backends halide_cpu && ls results/*/report.md"
[ $failed -eq 0 ] && say "passed" || say "failed"
exit $failed
