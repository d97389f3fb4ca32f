#!/usr/bin/env bash
# The merge job of a sweep (scripts/slurm/submit.sh submits it after the shards' array): merges
# every shard there is into SWEEP/merged (scripts/merge_results.py --partial: a missing or
# unfinished shard is named, not fatal); when shards are unfinished and retries are left, it
# resubmits them with --resume and a new merge job (submit.sh --resubmit). Exit status: 0 when
# the merged run is complete, 1 when it is not (and no retry is left or queued).
#
#   merge_task.sh SWEEP_DIR
set -uo pipefail
sweep=${1:?usage: merge_task.sh SWEEP_DIR}
# Slurm runs a copy of this script from its spool folder: the tree is the one sweep.json names.
root=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["root"])' "$sweep/sweep.json")
here=$root/scripts/slurm
mapfile -t runs < <(python3 "$here/sweep_state.py" "$sweep" --run-dirs)
if [ ${#runs[@]} -gt 0 ]; then
  python3 "$root/scripts/merge_results.py" "${runs[@]}" --partial --output-dir "$sweep/merged"
else
  echo "[merge_task] no shard has a run folder yet"
fi
todo=$(python3 "$here/sweep_state.py" "$sweep" --unfinished)
[ -n "$todo" ] || { echo "[merge_task] sweep complete: $sweep/merged"; exit 0; }
left=$(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(s["retries"] - s.get("resubmits", 0))' "$sweep/sweep.json")
if [ "$left" -gt 0 ]; then
  echo "[merge_task] unfinished shard(s) $todo: resubmitting with --resume ($left retry/retries left)"
  "$here/submit.sh" --resubmit "$sweep" && exit 0
  echo "[merge_task] resubmission failed"
fi
echo "[merge_task] sweep incomplete: shard(s) $todo unfinished; scripts/slurm/submit.sh --resubmit $sweep"
exit 1
