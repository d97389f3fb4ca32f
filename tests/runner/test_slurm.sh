#!/usr/bin/env bash
# scripts/slurm/ on a real Slurm (usage: test_slurm.sh path/to/myconv): a single-node cluster
# started here (munged on a private socket and key, slurmctld and slurmd from a generated
# slurm.conf on 127.0.0.1 with free ports; all stopped at the end, whatever happens). A quick
# CPU-only sweep of 4 tiny problems x 2 backends goes out as a job array of 2 shards; shard 2
# is stopped (SIGTERM, as Slurm does at a time limit) at its second problem, so the merge job
# (afterany) merges what is there, resubmits shard 2 with --resume (it keeps its first problem)
# and a new merge job completes the run. Checked: the merged run has the case set and statuses
# of a plain run of the same cases, shard 2 resumed rather than restarted, status.sh shows the
# jobs and the merged progress, bad submissions exit 2 with one line.
# Needs root and Debian's slurm-wlm and munge (scripts/setup.sh --tests installs them; tried
# here too): skipped (77) where they cannot be had.
set -u
myconv=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" -ne 0 ]; then
  echo "skip: slurmd and munged need root here"
  exit 77
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge \
    >/dev/null 2>&1 || { echo "skip: slurm-wlm and munge are not installed and cannot be"; exit 77; }
fi
work=$(mktemp -d)
chmod 755 "$work"
export SLURM_CONF=$work/slurm.conf
cleanup() {
  scancel --full --quiet -u "$(id -un)" 2>/dev/null
  local f
  for f in slurmd slurmctld munged; do
    [ ! -s "$work/$f.pid" ] || kill "$(cat "$work/$f.pid")" 2>/dev/null
  done
  sleep 0.5
  for f in slurmd slurmctld munged; do
    [ ! -s "$work/$f.pid" ] || kill -KILL "$(cat "$work/$f.pid")" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; passes=$((passes + 1)); }
abort() {
  echo "FAIL: $*"
  for f in "$work"/log/*.log; do [ -f "$f" ] && { echo "== $f"; tail -5 "$f"; }; done
  echo "$passes passed, $((failures + 1)) failed"
  exit 1
}

# ---- the cluster: munged, slurmctld, slurmd on 127.0.0.1 ------------------------------------
mkdir -p "$work/log" "$work/state" "$work/spool"
head -c 1024 /dev/urandom >"$work/munge.key"
chmod 600 "$work/munge.key"
munged --force --socket="$work/munge.sock" --key-file="$work/munge.key" \
  --log-file="$work/log/munged.log" --pid-file="$work/munged.pid" --seed-file="$work/munged.seed" ||
  abort "munged did not start"
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
node=$(hostname -s)
cat >"$SLURM_CONF" <<EOF
ClusterName=myconvtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF" -i || abort "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N "$node" || abort "slurmd did not start"
for i in $(seq 100); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && break
  [ "$i" -lt 100 ] || abort "the node is not idle after 20 s: $(sinfo 2>&1 | tail -2)"
  sleep 0.2
done
ok "single-node Slurm $(sinfo -V 2>/dev/null) up on 127.0.0.1"

# ---- the sweep ------------------------------------------------------------------------------
cat >"$work/tiny.txt" <<'EOF'
mb1ic2ih8oc2kh3n"p1"
mb1ic2ih9oc2kh3n"p2"
mb1ic2ih10oc2kh3n"p3"
mb2ic4ih12oc4kh3n"p4"
EOF
runner_opts=(--quick --shapes "$work/tiny.txt" --backends libtorch_cpu,onednn_cpu)
# myconv, except that shard 2's first invocation (cases/0001, its two problems) stops its runner
# once after the first problem, as Slurm's SIGTERM at a time limit would.
touch "$work/stop_once"
printf '#!/bin/bash\nmyconv="%s" work="%s"\n' "$myconv" "$work" >"$work/myconv"
cat >>"$work/myconv" <<'EOF'
case "$*" in
  *shard2of2/cases/0001.json*)
    if mv "$work/stop_once" "$work/stopped" 2>/dev/null; then
      args=() seen=0 drop=0
      for a in "$@"; do  # the first --problem only
        if [ $drop -eq 1 ]; then drop=0; continue; fi
        if [ "$a" = --problem ]; then
          seen=$((seen + 1))
          if [ $seen -ge 2 ]; then drop=1; continue; fi
        fi
        args+=("$a")
      done
      "$myconv" "${args[@]}"
      kill -TERM $PPID
      exec sleep 30
    fi
    ;;
esac
exec "$myconv" "$@"
EOF
chmod +x "$work/myconv"
export MYCONV_BIN=$work/myconv

MYCONV_BIN=$myconv "$root/scripts/run_all_experiments.sh" "${runner_opts[@]}" \
  --output-dir "$work/plain" >"$work/plain.log" 2>&1 || fail "plain run exited non-zero"

submit="$root/scripts/slurm/submit.sh"
"$submit" --shards 2 --cpu-only --sweep-dir "$work/bad" -- --shapes "$work/none.txt" \
  >/dev/null 2>"$work/err"
[ $? -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && [ ! -e "$work/bad" ] &&
  ok "bad runner option -> $(cat "$work/err")" || { fail "bad runner option"; cat "$work/err"; }
"$submit" --shards 2 -- --shard 1/2 >/dev/null 2>"$work/err"
[ $? -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && ok "--shard after -- -> $(cat "$work/err")" ||
  { fail "--shard after --"; cat "$work/err"; }

start=$(date +%s)
"$submit" --shards 2 --cpu-only --sweep-dir "$work/sweep" --retries 1 --time=00:10:00 -- \
  "${runner_opts[@]}" >"$work/submit.log" 2>&1 || abort "submit.sh failed: $(cat "$work/submit.log")"
grep -q "submitted shards job" "$work/submit.log" && ok "submitted: $(grep -c submitted "$work/submit.log") line(s)" ||
  fail "submit.sh output: $(cat "$work/submit.log")"
"$root/scripts/slurm/status.sh" "$work/sweep" >"$work/status_early.txt" 2>&1 ||
  fail "status.sh while running: $(tail -2 "$work/status_early.txt")"
# Done when the queue is empty and two merge jobs have been submitted (the second after the
# resubmission); 150 s at most.
for i in $(seq 300); do
  jobs=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["jobs"]))' "$work/sweep/sweep.json")
  [ -z "$(squeue -h 2>/dev/null)" ] && [ "$jobs" -ge 4 ] && break
  [ "$i" -lt 300 ] || abort "the sweep did not finish in 150 s: $(squeue 2>&1 | tail -3)"
  sleep 0.5
done
ok "sweep finished in $(($(date +%s) - start)) s"
[ -e "$work/stopped" ] && ok "shard 2 was stopped once" || fail "shard 2 was never stopped"

if python3 - "$work/plain" "$work/sweep" <<'PY'; then
import glob, json, os, sys
plain = json.load(open(glob.glob(os.path.join(sys.argv[1], "*", "results.json"))[0]))
sweep = sys.argv[2]
merged = json.load(open(os.path.join(sweep, "merged", "results.json")))
s = json.load(open(os.path.join(sweep, "sweep.json")))
key = lambda r: (r["problem"], r["name"], r["backend"], r["dtype"], r["status"])
assert [j["kind"] for j in s["jobs"]] == ["shards", "merge", "shards", "merge"], s["jobs"]
assert s["jobs"][2]["tasks"] == "2", s["jobs"][2]
assert merged["run"]["complete"] and merged["run"]["cases"] == 8, merged["run"]
assert sorted(map(key, merged["results"])) == sorted(map(key, plain["results"])), \
    "merged case set and statuses differ from the plain run"
assert [key(r) for r in merged["results"]] == [key(r) for r in plain["results"]], "order"
assert len(merged["systems"]) == 2, "one system per shard"
log2 = open(glob.glob(os.path.join(sweep, "shards", "2", "*", "all_experiments.txt"))[0]).read()
assert "stopped by SIGTERM" in log2, "shard 2's first attempt was not stopped"
assert "resuming" in log2 and ", 2 recorded," in log2, "shard 2 did not resume with its 2 cases"
print("ok: merged run = plain run (8 cases, same order and statuses); shard 2 resumed with 2 "
      "cases kept; jobs shards, merge, shards (task 2), merge")
PY
  passes=$((passes + 1))
else
  fail "merged run"
  tail -n 5 "$work"/sweep/logs/*.out
fi
"$root/scripts/slurm/status.sh" "$work/sweep" >"$work/status.txt" 2>&1
if grep -q "^merged: 8/8 cases complete" "$work/status.txt" &&
  grep -Eq "^2/2 +[0-9]+_2 +COMPLETED" "$work/status.txt" &&
  [ "$(grep -c '^merge ' "$work/status.txt")" -eq 2 ]; then
  ok "status.sh: shards, both merge jobs, merged 8/8"
else
  fail "status.sh"; cat "$work/status.txt"
fi
grep -q "^shard" "$work/status_early.txt" && ok "status.sh while queued or running" ||
  { fail "status.sh early"; cat "$work/status_early.txt"; }

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
