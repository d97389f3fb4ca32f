#!/usr/bin/env bash
# cmake/BuildInfo.cmake and scripts/offline/stamp_source.sh in a scratch git repository: the source
# record of a clean tree, a changed tracked file, untracked and ignored files, results/ left out,
# the real index untouched, a tree inside another checkout (not taking its commit),
# MYCONV_GIT_COMMIT, a stamped copy without .git, and one changed after its stamp; and that the
# generated .cpp embeds the difference byte for byte (compiled and run here).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
passes=0
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; passes=$((passes + 1)); else echo "FAIL: $what"; failures=$((failures + 1)); fi
}
# record DIR [COMMIT]: runs BuildInfo on DIR; the generated files are $work/bi.cpp, $work/bi.diff.
record() {
  cmake -DSOURCE_DIR="$1" -DOUT="$work/bi.cpp" -DDIFF="$work/bi.diff" -DVERSION=9.9 \
    ${2:+-DGIT_COMMIT=$2} -P "$root/cmake/BuildInfo.cmake" || echo "FAIL: BuildInfo.cmake failed on $1"
}
field() { sed -n "s/^extern const char\* const $1 = \"\(.*\)\";\$/\1/p" "$work/bi.cpp"; }
bytes() { sed -n 's/^extern const unsigned long long kSourceDiffBytes = \([0-9]*\)ULL;$/\1/p' "$work/bi.cpp"; }

repo="$work/repo"
mkdir -p "$repo/scripts/offline" "$repo/src" "$repo/results"
cp "$root/scripts/offline/stamp_source.sh" "$repo/scripts/offline/"
cp "$root/scripts/lib.sh" "$repo/scripts/"
echo 'int f() { return 1; }' >"$repo/src/a.cpp"
printf 'ignored.txt\n/.myconv-source/\n' >"$repo/.gitignore"
git -C "$repo" init -q
git -C "$repo" -c user.name=t -c user.email=t@t add -A
git -C "$repo" -c user.name=t -c user.email=t@t commit -qm first
head=$(git -C "$repo" rev-parse HEAD)

record "$repo"
check "clean checkout: origin git, the full commit, no difference" \
  test "$(field kSourceOrigin)/$(field kSourceCommit)/$(bytes)/$(field kBuildGitCommit)" = "git/$head/0/${head:0:12}"

echo 'int g() { return 2; }  // changed' >>"$repo/src/a.cpp"
echo 'int h();' >"$repo/src/untracked.hpp"
echo 'not source' >"$repo/ignored.txt"
echo '{}' >"$repo/results/out.json"
record "$repo"
check "changed tracked file: -dirty, the change in the difference" \
  bash -c "[ '$(field kBuildGitCommit)' = '${head:0:12}-dirty' ] && grep -q '^+int g() { return 2; }  // changed' '$work/bi.diff'"
check "an untracked file is in the difference, an ignored one and results/ are not" \
  bash -c "grep -q '^+++ b/src/untracked.hpp' '$work/bi.diff' && ! grep -q 'ignored.txt' '$work/bi.diff' && ! grep -q 'results/out.json' '$work/bi.diff'"
check "the difference's SHA-256 and size are recorded" \
  test "$(field kSourceDiffSha256)/$(bytes)" = "$(sha256sum "$work/bi.diff" | cut -c1-64)/$(wc -c <"$work/bi.diff")"
check "the real index is left alone (nothing staged)" git -C "$repo" diff --cached --quiet

# The generated .cpp embeds the difference: compiled with a reader, it prints it back.
cat >"$work/read.cpp" <<'EOF'
#include <cstdio>
namespace bench { extern const unsigned long long kSourceDiffBytes; }
extern "C" const char myconv_source_diff_begin[];
int main() { std::fwrite(myconv_source_diff_begin, 1, bench::kSourceDiffBytes, stdout); }
EOF
check "the embedded difference is the difference, byte for byte" \
  bash -c "c++ -std=c++17 -o '$work/read' '$work/read.cpp' '$work/bi.cpp' && '$work/read' | cmp -s - '$work/bi.diff'"

mkdir -p "$repo/sub"
record "$repo/sub"
check "a folder inside another checkout does not take its commit" test "$(field kSourceOrigin)/$(field kBuildGitCommit)" = "unknown/unknown"
record "$repo/sub" abcdef123456
check "MYCONV_GIT_COMMIT where nothing else is known" test "$(field kSourceOrigin)/$(field kBuildGitCommit)" = "cmake_option/abcdef123456"

"$repo/scripts/offline/stamp_source.sh" >/dev/null
copy="$work/copy"
mkdir "$copy"
(cd "$repo" && tar --exclude=.git -cf - .) | tar -xf - -C "$copy"
record "$copy"
check "a stamped copy without .git: origin stamp, the commit, the stamped difference" \
  bash -c "[ '$(field kSourceOrigin)/$(field kSourceCommit)/$(field kSourceModified)' = 'stamp/$head/' ] && grep -q 'untracked.hpp' '$work/bi.diff'"
echo 'int k();' >>"$copy/src/untracked.hpp"
rm "$copy/scripts/lib.sh"
echo 'new' >"$copy/src/added.cpp"
record "$copy"
check "a copy changed after its stamp names each change and says -modified" \
  bash -c "[ '$(field kBuildGitCommit)' = '${head:0:12}-dirty-modified' ] && [ '$(field kSourceModified)' = 'scripts/lib.sh (removed)\\nsrc/untracked.hpp\\nsrc/added.cpp (added)' ]"

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
