#!/usr/bin/env bash
# Installs what myconv needs on Debian 12 / Ubuntu 22.04 / 24.04, with apt-get (sudo when not
# root). Idempotent: when everything is installed it returns at once, without touching apt.
#
#   scripts/setup.sh                    install system packages (needs network)
#   scripts/setup.sh --tests            the same, plus the packages only the tests need
#   scripts/setup.sh --from-bundle DIR  unpack the .debs in DIR (scripts/offline/bundle_deps.sh's)
#                                       into .deps/prefix: no root, no network; the build uses it
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; }

from_bundle() {
  local dir=$1
  if [ ! -d "$dir" ] || ! ls "$dir"/*.deb >/dev/null 2>&1; then
    echo "setup.sh: error: --from-bundle: no .deb files in '$dir'" >&2
    exit 2
  fi
  local stamp="$MYCONV_PREFIX/.bundle-contents"
  local contents
  contents=$(cd "$dir" && ls -1 ./*.deb | sort)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$contents" ]; then
    myconv_log "bundle already unpacked in $MYCONV_PREFIX"
    return 0
  fi
  command -v dpkg-deb >/dev/null 2>&1 || { echo "setup.sh: error: dpkg-deb not found" >&2; exit 2; }
  rm -rf "$MYCONV_PREFIX"
  mkdir -p "$MYCONV_PREFIX"
  local deb
  for deb in "$dir"/*.deb; do
    dpkg-deb -x "$deb" "$MYCONV_PREFIX"
  done
  # Debian's -dev packages link the unversioned .so names to the runtime package's file; both
  # are unpacked, so the links resolve inside the prefix.
  echo "$contents" >"$stamp"
  myconv_log "unpacked $(echo "$contents" | wc -l) packages into $MYCONV_PREFIX"
}

install_system() {
  local with_tests=${1:-0}
  local wanted=("${MYCONV_OPTIONAL_PACKAGES[@]}")
  [ "$with_tests" = 1 ] && wanted+=("${MYCONV_TEST_PACKAGES[@]}")
  if myconv_setup_done && [ "${MYCONV_FORCE_SETUP:-0}" != 1 ]; then
    local missing=()
    local p
    for p in "${wanted[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then
      myconv_log "all packages present"
      return 0
    fi
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup.sh: error: not root and no sudo" >&2; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  myconv_log "apt-get update"
  $sudo apt-get update -qq
  local optional=()
  local p
  for p in "${wanted[@]}"; do
    if apt-cache show "$p" >/dev/null 2>&1; then
      optional+=("$p")
    else
      myconv_log "optional package $p is not in this distribution: its backend will not be built"
    fi
  done
  myconv_log "apt-get install ${MYCONV_REQUIRED_PACKAGES[*]} ${optional[*]}"
  $sudo apt-get install -y -qq --no-install-recommends "${MYCONV_REQUIRED_PACKAGES[@]}" \
    "${optional[@]}" >/dev/null
  myconv_log "set-up done"
}

case "${1:-}" in
  -h | --help) usage ;;
  --from-bundle)
    [ $# -eq 2 ] || { echo "setup.sh: error: --from-bundle needs a folder" >&2; exit 2; }
    from_bundle "$2"
    ;;
  "") install_system 0 ;;
  --tests) install_system 1 ;;
  *)
    echo "setup.sh: error: unknown argument '$1' (see --help)" >&2
    exit 2
    ;;
esac
