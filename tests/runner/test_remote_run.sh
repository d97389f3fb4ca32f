#!/usr/bin/env bash
# scripts/remote_run.sh against an sshd started for the test on 127.0.0.1 (a free port, a host key
# and a user key made here; usage: test_remote_run.sh path/to/myconv). It copies the tree, starts
# a quick run detached, --status shows it running and then finished with its last progress line,
# --fetch brings the run folder back; then the same with the other copy method (rsync / tar) and
# a --resume. Errors (unreachable host, no run started) exit 2 with one line.
# Needs root (sshd's privilege separation); skipped (exit 77) otherwise. Where sshd is missing or
# does not start, the test fails: scripts/setup.sh installs openssh-server.
set -u
myconv=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
remote_run="$root/scripts/remote_run.sh"
if [ "$(id -u)" -ne 0 ]; then
  echo "skip: starting an sshd for the test needs root"
  exit 77
fi
work=$(mktemp -d)
cleanup() {
  # A detached run the test started and left going (a failed check) is stopped, then sshd.
  [ ! -s "$work/remote/myconv/.remote/run.pid" ] ||
    kill "$(cat "$work/remote/myconv/.remote/run.pid")" 2>/dev/null
  [ ! -s "$work/sshd.pid" ] || kill "$(cat "$work/sshd.pid")" 2>/dev/null
  sleep 0.5
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; passes=$((passes + 1)); }
abort() {
  echo "FAIL: $*"
  echo "$passes passed, $((failures + 1)) failed"
  exit 1
}

sshd=$(command -v sshd || echo /usr/sbin/sshd)
[ -x "$sshd" ] || abort "no sshd (package openssh-server; scripts/setup.sh installs it)"
command -v ssh >/dev/null || abort "no ssh (package openssh-client)"
command -v rsync >/dev/null || abort "no rsync (package rsync)"
mkdir -p /run/sshd && chmod 755 /run/sshd  # sshd's privilege separation folder
ssh-keygen -q -t ed25519 -N '' -f "$work/host_key" || abort "ssh-keygen failed"
ssh-keygen -q -t ed25519 -N '' -f "$work/user_key" || abort "ssh-keygen failed"
cp "$work/user_key.pub" "$work/authorized_keys"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $work/host_key
PidFile $work/sshd.pid
AuthorizedKeysFile $work/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
AllowUsers $(id -un)
EOF
"$sshd" -f "$work/sshd_config" -E "$work/sshd.log" || abort "sshd did not start: $(tail -3 "$work/sshd.log")"
conn=(--port "$port" --key "$work/user_key" -o "UserKnownHostsFile=$work/known_hosts")
for i in $(seq 50); do
  ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new -o LogLevel=ERROR \
    -p "$port" -i "$work/user_key" -o "UserKnownHostsFile=$work/known_hosts" "$(id -un)@127.0.0.1" true \
    </dev/null 2>/dev/null && break
  [ "$i" -lt 50 ] || abort "cannot log in to the test's sshd: $(tail -5 "$work/sshd.log")"
  sleep 0.2
done
ok "sshd on 127.0.0.1:$port"
host="$(id -un)@127.0.0.1"
remote_dir="$work/remote/myconv"
r=("$host" "${conn[@]}" --dir "$remote_dir")

# expect_error WHAT ARGS...: exit 2 and one line on stderr.
expect_error() {
  local what=$1
  shift
  "$remote_run" "$@" >"$work/stdout" 2>"$work/stderr"
  local rc=$?
  if [ $rc -eq 2 ] && [ "$(wc -l <"$work/stderr")" -eq 1 ]; then
    ok "$what -> $(cat "$work/stderr")"
  else
    fail "$what: exit $rc, stderr: $(cat "$work/stderr")"
  fi
}
closed=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
expect_error "unreachable host" "$host" --port "$closed" --key "$work/user_key" --status
expect_error "no run started" "${r[@]}" --status
expect_error "nothing to fetch" "${r[@]}" --fetch --into "$work/fetched"
expect_error "unknown option" "${r[@]}" --frobnicate
expect_error "no host" --status

printf 'mb1ic2ih8oc2kh3n"a"\nmb1ic2ih10oc4kh3ph1n"b"\n' >"$work/tiny.txt"
# A myconv that waits for the file "go", so that the first run is surely still going when
# --status looks and when a second start is tried.
printf '#!/bin/sh\nwhile [ ! -e "%s/go" ]; do sleep 0.2; done\nexec "%s" "$@"\n' "$work" "$myconv" \
  >"$work/gated_myconv"
chmod +x "$work/gated_myconv"

# wait_finished: --status until the run has finished (90 s at most); its output in $work/status.
wait_finished() {
  local i
  for i in $(seq 90); do
    "$remote_run" "${r[@]}" --status >"$work/status" 2>&1
    grep -q ": finished (exit" "$work/status" && return 0
    sleep 1
  done
  return 1
}

for copy in tar rsync; do
  if [ $copy = tar ]; then
    args=(--env "MYCONV_BIN=$work/gated_myconv" -- --quick --shapes "$work/tiny.txt"
      --backends "libtorch_cpu,onednn_cpu")
  else
    args=(--env "MYCONV_BIN=$myconv" -- --resume "results/$(basename "$run")")
  fi
  start=$(date +%s)
  if MYCONV_REMOTE_COPY=$copy "$remote_run" "${r[@]}" "${args[@]}" >"$work/start" 2>&1; then
    ok "$copy: started in $(($(date +%s) - start)) s (the ssh session ended, the run goes on)"
  else
    fail "$copy: start failed"; cat "$work/start"
  fi
  [ -f "$remote_dir/scripts/run_all_experiments.sh" ] && [ -d "$remote_dir/.git" ] &&
    ! ls -d "$remote_dir"/build* "$remote_dir/.bundle" "$remote_dir/.deps" >/dev/null 2>&1 &&
    ok "$copy: tree copied without build folders, .deps, .bundle" || fail "$copy: remote tree: $(ls -a "$remote_dir")"
  # The copy carries a stamp of the local source: a remote build without git names it too.
  if git -C "$root" rev-parse --show-toplevel >/dev/null 2>&1; then
    [ "$(cat "$remote_dir/.myconv-source/commit" 2>/dev/null)" = "$(git -C "$root" rev-parse HEAD)" ] &&
      [ -s "$remote_dir/.myconv-source/manifest.sha256" ] &&
      ok "$copy: the source stamp travelled (commit $(git -C "$root" rev-parse --short HEAD))" ||
      fail "$copy: no source stamp of the local HEAD in the copy"
  fi
  if [ $copy = tar ]; then
    "$remote_run" "${r[@]}" --status >"$work/status" 2>&1
    grep -q ": running (pid" "$work/status" && ok "tar: --status says running" ||
      { fail "tar: --status right after the start"; cat "$work/status"; }
    expect_error "second start while running" "${r[@]}" --env "MYCONV_BIN=$myconv" -- --quick \
      --shapes "$work/tiny.txt" --backends libtorch_cpu
    touch "$work/go"
  fi
  if wait_finished; then
    ok "$copy: --status says finished"
  else
    fail "$copy: run did not finish"; cat "$work/status"
  fi
  if grep -A1 -- "--- last progress line" "$work/status" | grep -qE '^\[4/4\] elapsed [0-9:]+ eta [0-9:]+ \S+ \S+: passed'; then
    ok "$copy: --status shows the last progress line"
  elif [ $copy = rsync ] && grep -q "4 recorded" "$work/status"; then
    ok "$copy: --status shows the resumed run with all 4 cases recorded"
  else
    fail "$copy: --status output"; cat "$work/status"
  fi
  run=$(ls -d "$remote_dir"/results/*/ | head -1)
  run=${run%/}
  fetched="$work/fetched_$copy"
  if MYCONV_REMOTE_COPY=$copy "$remote_run" "${r[@]}" --fetch --into "$fetched" >"$work/fetch" 2>&1 &&
      grep -q "fetched $fetched/$(basename "$run")" "$work/fetch"; then
    ok "$copy: --fetch -> $(cat "$work/fetch")"
  else
    fail "$copy: --fetch"; cat "$work/fetch"
  fi
  if python3 - "$fetched/$(basename "$run")" <<'PY'; then
import csv, json, os, sys
d = sys.argv[1]
doc = json.load(open(f"{d}/results.json"))
assert len(doc["results"]) == 4 and doc["run"]["complete"], doc["run"]
assert all(r["status"] == "passed" for r in doc["results"]), [r["status"] for r in doc["results"]]
assert len(list(csv.DictReader(open(f"{d}/results.csv")))) == 4
assert os.path.getsize(f"{d}/all_experiments.txt") > 0
assert not os.path.exists(f"{d}/.runner.lock")
PY
    ok "$copy: fetched run folder holds the 4 results"
  else
    fail "$copy: fetched run folder"; ls -la "$fetched"/*
  fi
done

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
