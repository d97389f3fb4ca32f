#!/usr/bin/env bash
# One array task of a sweep (scripts/slurm/submit.sh submits it): shard $SLURM_ARRAY_TASK_ID of
# the sweep's case list into SWEEP/shards/I/<run folder>; when an earlier attempt left that run
# folder, it is resumed (--resume keeps the finished cases). Exit status: the runner's (143 when
# Slurm stopped the task at its time limit: the finished cases stay).
#
#   shard_task.sh SWEEP_DIR
set -uo pipefail
sweep=${1:?usage: shard_task.sh SWEEP_DIR}
i=${SLURM_ARRAY_TASK_ID:?not an array task}
get() { python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); v = s[sys.argv[2]];
print("\n".join(v) if isinstance(v, list) else ("" if v is None else v))' "$sweep/sweep.json" "$1"; }
root=$(get root)
n=$(get shards)
mapfile -t args < <(get runner_args)
myconv=$(get myconv_bin) myops=$(get myops_bin)
[ -z "$myconv" ] || export MYCONV_BIN=$myconv
[ -z "$myops" ] || export MYOPS_BIN=$myops
echo "[shard_task] shard $i/$n on $(hostname -s), job ${SLURM_JOB_ID:-?}, CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset}"
out="$sweep/shards/$i"
mkdir -p "$out"
run=""
for d in "$out"/*/; do
  [ -d "$d" ] || continue
  if [ -f "$d/run.json" ]; then run=${d%/}; else rm -rf "$d"; fi  # killed while listing
done
if [ -n "$run" ]; then
  exec "$root/scripts/run_all_experiments.sh" --resume "$run"
fi
exec "$root/scripts/run_all_experiments.sh" "${args[@]}" --shard "$i/$n" --output-dir "$out"
