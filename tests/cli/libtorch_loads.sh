# Sourced by the programs' command-line tests (test_myconv.sh, test_myops.sh): which runs of a
# program load LibTorch. Its LibTorch backends live in a module opened only when a LibTorch case
# runs (baselines/libtorch_loader.cpp); a command line, a listing or a run of other backends must
# never load libtorch_cpu.so, which costs most of a start.
#
# expect_libtorch yes|no DESCRIPTION PROGRAM ARGS...: the program's exit code is not judged here.
# Uses the caller's $work, fail and passes.
expect_libtorch() {
  local want=$1 what=$2
  shift 2
  rm -f "$work"/ld_debug.*
  LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/ld_debug" "$@" >/dev/null 2>&1
  local got=no
  if grep -q 'libtorch_cpu\.so' "$work"/ld_debug.* 2>/dev/null; then got=yes; fi
  if ! ls "$work"/ld_debug.* >/dev/null 2>&1; then
    fail "$what: LD_DEBUG wrote nothing (cannot tell what was loaded)"
  elif [ "$got" != "$want" ]; then
    fail "$what: libtorch_cpu.so loaded: $got, expected $want"
  else
    passes=$((passes + 1))
    echo "ok: $what -> libtorch loaded: $got"
  fi
}

# Whether the program has its libtorch_cpu backend built (--list-backends' "built" column).
libtorch_cpu_built() {
  "$1" --list-backends 2>/dev/null | grep -Eq '^libtorch_cpu +cpu +yes'
}

# Whether --list-backends may load LibTorch: where libtorch_cuda is built and its device is there,
# only LibTorch can answer its availability and library version (its own device check, the cuDNN
# it loaded), so the listing opens the module; everywhere else it must not.
list_backends_libtorch() {
  if "$1" --list-backends 2>/dev/null | grep -Eq '^libtorch_cuda +cuda +yes +yes'; then
    echo yes
  else
    echo no
  fi
}
