#!/usr/bin/env bash
# The state of a Slurm sweep (scripts/slurm/submit.sh): each shard's job state (squeue, sacct; or
# scontrol where accounting is off), its progress (cases recorded of its share), the merge jobs,
# and the merged run's progress with the path of its report.
#
#   scripts/slurm/status.sh SWEEP_DIR
set -euo pipefail
[ $# -eq 1 ] && [ -f "$1/sweep.json" ] || {
  echo "status.sh: error: usage: status.sh SWEEP_DIR (a folder made by submit.sh)" >&2
  exit 2
}
exec python3 "$(dirname "$0")/sweep_state.py" "$1"
