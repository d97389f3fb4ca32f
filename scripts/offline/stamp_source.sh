#!/usr/bin/env bash
# Stamps this checkout's source into .myconv-source/ so that a copy of the tree without its .git
# (tar to an offline GPU host with the .bundle, rsync without .git, an unpacked archive) still
# builds programs that name the exact source: the commit, the difference of the working tree from
# it (untracked files that are not ignored included, results/ left out) and a SHA-256 per file.
# cmake/BuildInfo.cmake reads the stamp where no checkout is found, checks every file against it,
# and names any file changed, added or removed since (modified_since_stamp) instead of trusting it.
#
#   scripts/offline/stamp_source.sh [--print]  write .myconv-source/ (--print: also show the record)
# Copy the tree after stamping; stamp again after any change. scripts/remote_run.sh does this.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

case "${1:-}" in
  "" | --print) ;;
  -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "stamp_source.sh: error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
cd "$MYCONV_ROOT"
[ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$MYCONV_ROOT" ] ||
  { echo "stamp_source.sh: error: $MYCONV_ROOT is not a git checkout: nothing to stamp from" >&2; exit 2; }
stamp="$MYCONV_ROOT/.myconv-source"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The same difference as cmake/BuildInfo.cmake takes from a checkout: a copy of the index, so that
# the real one is left alone.
cp "$(git rev-parse --git-path index)" "$tmp/index" 2>/dev/null || true
GIT_INDEX_FILE="$tmp/index" git add -A -- . ':(exclude)results'
GIT_INDEX_FILE="$tmp/index" git diff --cached --binary --no-color --no-ext-diff HEAD -- . \
  ':(exclude)results' >"$tmp/source.diff"
git rev-parse HEAD >"$tmp/commit"
git ls-files -z --cached --others --exclude-standard -- . ':(exclude)results' | sort -z -u |
  while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
  xargs -0 -r sha256sum -- >"$tmp/manifest.sha256"
rm -rf "$stamp"
mkdir -p "$stamp"
mv "$tmp/commit" "$tmp/source.diff" "$tmp/manifest.sha256" "$stamp/"
myconv_log "stamped $(cat "$stamp/commit" | cut -c1-12)$([ -s "$stamp/source.diff" ] && echo " + a difference of $(wc -c <"$stamp/source.diff") bytes"), $(wc -l <"$stamp/manifest.sha256") files, in $stamp"
[ "${1:-}" != --print ] || cat "$stamp/commit"
