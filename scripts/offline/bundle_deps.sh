#!/usr/bin/env bash
# Downloads the .debs a GPU host without network needs into DIR, on a networked Debian 12
# machine (amd64). Then copy DIR to the host and run `scripts/setup.sh --from-bundle DIR` there.
#
#   scripts/offline/bundle_deps.sh DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

if [ $# -ne 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -eq 1 ] && exit 0 || exit 2
fi
dir=$1
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# apt-get download needs package lists; a machine that never ran apt-get update has none.
if ! apt-cache show "${MYCONV_BUNDLE_PACKAGES[0]}" >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then apt-get update -qq; else sudo apt-get update -qq; fi
fi
(cd "$dir" && apt-get download -qq -oAPT::Architecture=amd64 -oAPT::Sandbox::User=root "${MYCONV_BUNDLE_PACKAGES[@]}")
myconv_log "downloaded $(ls "$dir"/*.deb | wc -l) packages ($(du -sh "$dir" | cut -f1)) into $dir"
