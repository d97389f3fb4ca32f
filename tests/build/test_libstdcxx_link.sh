#!/usr/bin/env bash
# Each program given loads libstdc++ as the shared library and defines none of its functions or
# thread-locals itself. A program that linked pieces of libstdc++.a (as g++ in /opt/gcc on the GPU
# host did, whose own folder holds the archive only) has its own std::call_once state beside the
# shared library's; oneDNN, opened with RTLD_DEEPBIND, then called a null pointer on every problem
# (cmake/Dependencies.cmake says more). Data objects are left out: a position-independent
# program's copy relocations legitimately define std::cout and the like.
# Usage: test_libstdcxx_link.sh PROGRAM...
set -u
[ $# -gt 0 ] || { echo "usage: test_libstdcxx_link.sh PROGRAM..." >&2; exit 2; }
failures=0
strong_code() {  # the GLOBAL functions and thread-locals FILE defines, names without versions
  readelf -W -s "$1" | awk '$7 != "UND" && $5 == "GLOBAL" && ($4 == "FUNC" || $4 == "TLS") {
    n = $8; sub(/@.*/, "", n); print n }' | sort -u
}
for prog in "$@"; do
  lib=$(ldd "$prog" | awk '$1 ~ /^libstdc\+\+\.so/ { print $3 }')
  if [ -z "$lib" ] || ! readelf -d "$prog" | grep -q 'NEEDED.*\[libstdc++\.so'; then
    echo "FAIL: $prog does not load libstdc++ as a shared library"
    failures=$((failures + 1))
    continue
  fi
  both=$(comm -12 <(strong_code "$prog") <(readelf -W --dyn-syms "$lib" |
    awk '$7 != "UND" { n = $8; sub(/@.*/, "", n); print n }' | sort -u))
  if [ -n "$both" ]; then
    echo "FAIL: $prog defines $(echo "$both" | wc -l) of $lib's functions or thread-locals" \
         "itself (linked from libstdc++.a), e.g.: $(echo "$both" | head -3 | tr '\n' ' ')"
    failures=$((failures + 1))
  else
    echo "ok: $prog uses $lib and defines none of its code"
  fi
done
exit $((failures > 0))
