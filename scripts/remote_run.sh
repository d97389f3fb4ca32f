#!/usr/bin/env bash
# Runs scripts/run_all_experiments.sh on a remote machine (a GPU instance) over ssh: copies this
# working tree there, starts the run detached (it survives the ssh session), shows its progress,
# and copies the run folders back.
#
#   scripts/remote_run.sh user@host [options] [-- run_all_experiments.sh options]
#                                    copy the tree to REMOTE_DIR and start a run there
#   scripts/remote_run.sh user@host [options] --status   state, last log lines, last progress line
#   scripts/remote_run.sh user@host [options] --fetch [--into DIR]
#                                    copy REMOTE_DIR/results/<run folders> into DIR (results/)
#   scripts/remote_run.sh user@host [options] --stop     stop the run (it keeps finished cases;
#                                    start again with -- --resume results/<run folder>)
# options:
#   --key FILE          ssh identity file          --port N      ssh port
#   --dir REMOTE_DIR    folder on the remote machine (default: myconv, in the remote home)
#   -o SSH_OPTION       passed to ssh (repeatable), e.g. -o UserKnownHostsFile=/tmp/known
#   --env NAME=VALUE    set in the run's environment (repeatable), e.g. CUDA_VISIBLE_DEVICES=1
#   --bundle            copy .bundle/ too and set up from it (a remote host without network)
# e.g. scripts/remote_run.sh ubuntu@203.0.113.7 --key ~/.ssh/gpu.pem -- --preset all
# The copy leaves out build*/, .deps/, .bundle/ (unless --bundle) and results/ (rsync, or tar
# where rsync is missing) and carries a source stamp (scripts/offline/stamp_source.sh), so that the
# remote build names the local commit and difference even without git there; the run's console log
# is REMOTE_DIR/.remote/run-<time>.log.
# Exit codes: 0 done; 2 bad options, ssh unreachable, no run started; 1 another failure.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

prog=remote_run.sh
die() {
  echo "$prog: error: $*" >&2
  exit 2
}

host="" key="" port="" dir=myconv action=start into="$MYCONV_ROOT/results" bundle=0
user_opts=() envs=() runner_args=()
while [ $# -gt 0 ]; do
  opt=$1
  case "$opt" in
    --key | --port | --dir | -o | --env | --into)
      [ $# -ge 2 ] && [ -n "$2" ] || die "$opt needs a value (see --help)"
      case "$opt" in
        --key) key=$2 ;;
        --port) port=$2 ;;
        --dir) dir=$2 ;;
        -o) user_opts+=(-o "$2") ;;
        --env) [[ "$2" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env: expected NAME=VALUE, got '$2'"
          envs+=("$2") ;;
        --into) into=$2 ;;
      esac
      shift 2
      ;;
    --status | --fetch | --stop) action=${opt#--}; shift ;;
    --bundle) bundle=1; shift ;;
    --) shift; runner_args=("$@"); break ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) die "unknown option '$opt' (see --help)" ;;
    *) [ -z "$host" ] || die "one host expected, got '$host' and '$opt'"; host=$opt; shift ;;
  esac
done
[ -n "$host" ] || die "no host given: scripts/remote_run.sh user@host [options] (see --help)"
[ -z "$port" ] || [[ "$port" =~ ^[0-9]+$ ]] || die "--port: expected a number, got '$port'"
[ -z "$key" ] || [ -r "$key" ] || die "--key: cannot read '$key'"
[ "$action" = start ] || [ ${#runner_args[@]} -eq 0 ] || die "runner options go with a start only"
[ "$action" = start ] || [ $bundle -eq 0 ] || die "--bundle goes with a start only"
dir=${dir#\~/}  # relative paths are relative to the remote home anyway
command -v ssh >/dev/null || die "ssh not found (openssh-client; scripts/setup.sh installs it)"

ssh_cmd=(ssh -o BatchMode=yes -o ConnectTimeout=15 -o StrictHostKeyChecking=accept-new
  -o ServerAliveInterval=30 -o ServerAliveCountMax=4 -o LogLevel=ERROR)
[ -z "$key" ] || ssh_cmd+=(-i "$key" -o IdentitiesOnly=yes)
[ -z "$port" ] || ssh_cmd+=(-p "$port")
ssh_cmd+=("${user_opts[@]}")

# remote_bash SCRIPT ARGS...: runs SCRIPT with bash on the remote machine, ARGS as $1, $2, ...
# (the script travels on stdin, so only the arguments need quoting).
remote_bash() {
  local script=$1
  shift
  "${ssh_cmd[@]}" "$host" "bash -s -- $(printf '%q ' "$@")" <<<"$script"
}

# Reachable? And does the remote machine have rsync (else tar is used)?
probe=$("${ssh_cmd[@]}" "$host" 'echo myconv-ok; command -v rsync >/dev/null && echo rsync' \
  </dev/null 2>"${TMPDIR:-/tmp}/remote_run.$$.err") || true
err=$(tail -n 1 "${TMPDIR:-/tmp}/remote_run.$$.err" || true)
rm -f "${TMPDIR:-/tmp}/remote_run.$$.err"
[[ "$probe" == myconv-ok* ]] ||
  die "cannot reach $host over ssh${port:+ (port $port)}: ${err:-no answer}"
use_rsync=0  # MYCONV_REMOTE_COPY=tar forces the fallback (tests)
if [[ "$probe" == *rsync* ]] && command -v rsync >/dev/null &&
  [ "${MYCONV_REMOTE_COPY:-}" != tar ]; then use_rsync=1; fi
rsync_ssh=$(printf "'%s' " "${ssh_cmd[@]}")  # rsync -e splits on spaces, honouring quotes

# state_script DIR: prints "state running|finished|stopped|none", "pid", "exit", "log", "run".
state_script='
cd "$1" 2>/dev/null && [ -L .remote/current.log ] || { echo "state none"; exit 0; }
log=.remote/$(readlink .remote/current.log)
pid=$(cat .remote/run.pid 2>/dev/null || true)
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then echo "state running"
elif [ -f .remote/run.exit ]; then echo "state finished"
else echo "state stopped"; fi
echo "pid $pid"
echo "exit $(cat .remote/run.exit 2>/dev/null || true)"
echo "log $log"
echo "run $(sed -n "s/^\[myconv\] run folder \([^ ]*\).*/\1/p" "$log" | tail -n 1)"
'
field() { sed -n "s/^$1 //p" <<<"$state"; }

case "$action" in
  start)
    state=$(remote_bash "$state_script" "$dir")
    [ "$(field state)" != running ] ||
      die "a run is already going on $host:$dir (pid $(field pid)); see --status, or --stop it"
    # The copy names its source even where the remote has no git: the stamp travels with it
    # (scripts/offline/stamp_source.sh; a tree that is not a checkout is sent as it is).
    if git -C "$MYCONV_ROOT" rev-parse --show-toplevel >/dev/null 2>&1; then
      "$MYCONV_ROOT/scripts/offline/stamp_source.sh" >/dev/null
    fi
    excludes=(/build*/ /.deps/ /results/ /.remote/ __pycache__/ '*.pyc')
    [ $bundle -eq 1 ] || excludes+=(/.bundle/)
    "${ssh_cmd[@]}" "$host" "mkdir -p $(printf '%q' "$dir")" </dev/null
    if [ $use_rsync -eq 1 ]; then
      # --delete spares excluded paths on the remote side: its builds and results stay.
      rsync -az --delete "${excludes[@]/#/--exclude=}" -e "$rsync_ssh" "$MYCONV_ROOT/" \
        "$host:$dir/" || { echo "$prog: error: copying the tree with rsync failed" >&2; exit 1; }
    else
      tar_excludes=()
      for e in "${excludes[@]}"; do
        e=${e%/}
        [[ "$e" == /* ]] && tar_excludes+=("--exclude=.$e") || tar_excludes+=("--exclude=$e")
      done
      tar -C "$MYCONV_ROOT" "${tar_excludes[@]}" -czf - . |
        "${ssh_cmd[@]}" "$host" "tar -xzf - -C $(printf '%q' "$dir")" ||
        { echo "$prog: error: copying the tree with tar failed" >&2; exit 1; }
    fi
    [ $bundle -eq 0 ] || runner_args=(--from-bundle .bundle "${runner_args[@]}")
    # Detached: setsid leaves the ssh session, nohup ignores its hang-up, all streams are
    # redirected so ssh returns at once. The wrapper records the runner's pid and exit status.
    start_script='
cd "$1" || exit 1
shift
envs=()
while [ "$1" != -- ]; do envs+=("$1"); shift; done
shift
mkdir -p .remote
rm -f .remote/run.pid .remote/run.exit
log=run-$(date -u +%Y%m%d_%H%M%S).log
ln -sfn "$log" .remote/current.log
nohup setsid env "${envs[@]}" bash -c "
  scripts/run_all_experiments.sh \"\$@\" &
  echo \$! >.remote/run.pid
  wait \$!
  echo \$? >.remote/run.exit" run "$@" >".remote/$log" 2>&1 </dev/null &
for i in $(seq 50); do [ -s .remote/run.pid ] && break; sleep 0.1; done
echo ".remote/$log"
'
    log=$(remote_bash "$start_script" "$dir" "${envs[@]}" -- "${runner_args[@]}") ||
      { echo "$prog: error: starting the run on $host failed" >&2; exit 1; }
    sleep 3
    state=$(remote_bash "$state_script" "$dir")
    echo "$prog: started on $host:$dir: scripts/run_all_experiments.sh ${runner_args[*]}"
    echo "  log: $dir/$log (now: $(field state))"
    remote_bash 'cd "$1" && tail -n 5 "$2"' "$dir" "$log" | sed 's/^/  | /'
    if [ "$(field state)" = finished ] && [ "$(field exit)" != 0 ]; then
      echo "$prog: error: the run ended at once with exit $(field exit) (log above)" >&2
      exit 1
    fi
    echo "  watch: scripts/remote_run.sh $host ... --status; then ... --fetch"
    ;;
  status)
    state=$(remote_bash "$state_script" "$dir")
    [ "$(field state)" != none ] || die "no run started in $host:$dir"
    case "$(field state)" in
      running) what="running (pid $(field pid))" ;;
      finished) what="finished (exit $(field exit))" ;;
      *) what="stopped (no exit status: killed, or the machine rebooted)" ;;
    esac
    echo "$host:$dir: $what"
    echo "log: $dir/$(field log)"
    [ -z "$(field run)" ] || echo "run folder: $(field run)"
    echo "--- last lines of the log"
    remote_bash 'cd "$1" && tail -n 15 "$2"' "$dir" "$(field log)"
    echo "--- last progress line"
    remote_bash 'cd "$1" && { grep -E "^\[[0-9]+/[0-9]+\] " "$2" | tail -n 1 | grep . ||
      echo "(none yet)"; }' \
      "$dir" "$(field log)"
    ;;
  fetch)
    state=$(remote_bash "$state_script" "$dir")
    runs=$(remote_bash 'cd "$1" 2>/dev/null && ls -d results/*/ 2>/dev/null |
      grep -E "/[0-9]{8}_[0-9]{6}_" || true' "$dir")
    [ -n "$runs" ] || die "no run folder in $host:$dir/results"
    mkdir -p "$into"
    if [ $use_rsync -eq 1 ]; then
      rsync -az --exclude=.runner.lock --exclude=/README.md -e "$rsync_ssh" "$host:$dir/results/" \
        "$into/" || { echo "$prog: error: copying the results back failed" >&2; exit 1; }
    else
      remote_bash 'cd "$1/results" && ls -d */ | grep -E "^[0-9]{8}_[0-9]{6}_" |
        xargs tar -czf - --exclude=.runner.lock' "$dir" | tar -xzf - -C "$into" ||
        { echo "$prog: error: copying the results back failed" >&2; exit 1; }
    fi
    current=$(basename "$(field run)" 2>/dev/null || true)
    while read -r r; do
      r=$(basename "$r")
      note=""
      if [ "$(field state)" = running ] && [ "$r" = "$current" ]; then
        note=" (still running: the cases finished so far)"
      fi
      echo "fetched $into/$r$note"
    done <<<"$runs"
    ;;
  stop)
    state=$(remote_bash "$state_script" "$dir")
    [ "$(field state)" = running ] || die "no run going on in $host:$dir"
    remote_bash 'kill -TERM "$1"
      for _ in $(seq 300); do kill -0 "$1" 2>/dev/null || exit 0; sleep 0.1; done
      exit 1' \
      "$(field pid)" || { echo "$prog: error: the run did not stop within 30 s" >&2; exit 1; }
    echo "stopped the run on $host:$dir (pid $(field pid)); its finished cases are kept"
    ;;
esac
