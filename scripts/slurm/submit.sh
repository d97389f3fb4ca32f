#!/usr/bin/env bash
# Submits a sweep to Slurm: a job array with one shard of the case list per array task
# (scripts/run_all_experiments.sh --shard I/N), and a job that merges the shards when the array is
# over (--dependency=afterany; scripts/merge_results.py). Everything lands in one sweep folder,
# which must be on a filesystem the compute nodes share: shards/I/<run folder>, merged/ (the one
# run: results.json, results.csv, report.md, plots/), logs/ (Slurm's output), sweep.json.
# Shards that failed or ran out of time are resubmitted by the merge job (--retries, default 1)
# with --resume: they keep the cases they finished. docs/sweeps.md has the cluster set-up.
#
#   scripts/slurm/submit.sh [--shards N] [--cpu-only] [--sweep-dir DIR] [--retries N]
#                           [sbatch options] -- <run_all_experiments.sh options>
#   scripts/slurm/submit.sh --resubmit SWEEP_DIR   the unfinished shards again (--resume), and a
#                                                  new merge job
#     --shards N        array tasks, one shard each (default 4)
#     --cpu-only        no GPU per task (default: --gpus-per-task=1 unless a --gpus* or --gres
#                       option is given)
#     --sweep-dir DIR   the sweep folder (default results/slurm_<YYYYMMDD_HHMMSS>)
#     --retries N       how often the merge job resubmits unfinished shards (default 1)
#   sbatch options go to every shard task (e.g. --time=02:00:00 -p gpu -A proj); the merge job
#   gets only the partition, account, QOS, reservation and cluster ones.
#   e.g. scripts/slurm/submit.sh --shards 8 --time=01:00:00 -p gpu -- --preset all --dtypes fp32,fp16
# The programs are the build's (build/experiments/, --build-dir after --) or MYCONV_BIN/MYOPS_BIN;
# the options are checked here first (a --plan of the sweep: bad ones exit 2 with one line, and a
# missing build is built here, once, before any task starts). Prints the job ids and the folder.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../lib.sh"
prog=submit.sh
usage_error() {
  echo "$prog: error: $* (see --help)" >&2
  exit 2
}
json_get() {  # json_get FILE EXPR: a value of sweep.json (EXPR in Python, on `s`)
  python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); v = eval(sys.argv[2]);
print(v if isinstance(v, str) else json.dumps(v))' "$1" "$2"
}

shards=4 cpu_only=0 sweep="" retries=1 resubmit="" sbatch_args=() runner_args=() gpu_given=0
while [ $# -gt 0 ]; do
  case "$1" in
    --shards | --sweep-dir | --retries | --resubmit)
      [ $# -ge 2 ] && [ -n "$2" ] || usage_error "$1 needs a value"
      case "$1" in
        --shards) shards=$2 ;;
        --sweep-dir) sweep=$2 ;;
        --retries) retries=$2 ;;
        --resubmit) resubmit=$2 ;;
      esac
      shift 2 ;;
    --cpu-only) cpu_only=1; shift ;;
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --) shift; runner_args=("$@"); break ;;
    --array | --array=* | -a | --dependency* | -d | --output* | -o | --error* | -e | --parsable)
      usage_error "sbatch option '$1': submit.sh sets it itself" ;;
    --gpus* | --gres* | -G) gpu_given=1; sbatch_args+=("$1"); shift ;;
    *) sbatch_args+=("$1"); shift ;;
  esac
done
command -v sbatch >/dev/null 2>&1 || usage_error "no sbatch on PATH (is this a Slurm login node?)"

# The sbatch options the merge job takes from the shards' (where and on whose account it runs).
merge_args() {
  local a keep=0
  for a in "$@"; do
    if [ $keep -eq 1 ]; then echo "$a"; keep=0; continue; fi
    case "$a" in
      --partition=* | --account=* | --qos=* | --reservation=* | --clusters=* | -p?* | -A?* | -M?*)
        echo "$a" ;;
      --partition | --account | --qos | --reservation | --clusters | -p | -A | -M) echo "$a"; keep=1 ;;
    esac
  done
}

# submit_array SWEEP TASKS: the shards' job array (TASKS: 1-4, or 2,4), then its merge job;
# both recorded in sweep.json.
submit_array() {
  local dir=$1 tasks=$2 array merge
  mapfile -t sargs < <(json_get "$dir/sweep.json" '"\n".join(s["sbatch_args"])' | sed '/^$/d')
  mapfile -t margs < <(json_get "$dir/sweep.json" '"\n".join(s["merge_sbatch_args"])' | sed '/^$/d')
  array=$(sbatch --parsable --array="$tasks" --job-name=myconv-shard \
    --output="$dir/logs/shard_%a_job%A.out" "${sargs[@]}" "$here/shard_task.sh" "$dir") ||
    { echo "$prog: error: sbatch refused the shards' job array" >&2; exit 1; }
  array=${array%%;*}
  merge=$(sbatch --parsable --dependency="afterany:$array" --job-name=myconv-merge --ntasks=1 \
    --output="$dir/logs/merge_job%j.out" "${margs[@]}" "$here/merge_task.sh" "$dir") ||
    { echo "$prog: error: sbatch refused the merge job (shards job $array is queued)" >&2; exit 1; }
  merge=${merge%%;*}
  python3 - "$dir/sweep.json" "$array" "$tasks" "$merge" <<'PY'
import datetime, json, os, sys
path, array, tasks, merge = sys.argv[1:]
s = json.load(open(path))
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
s["jobs"].append({"kind": "shards", "id": array, "tasks": tasks, "submitted_utc": now})
s["jobs"].append({"kind": "merge", "id": merge, "after": array, "submitted_utc": now})
tmp = path + ".tmp"
json.dump(s, open(tmp, "w"), indent=2)
os.replace(tmp, path)
PY
  myconv_log "submitted shards job $array (tasks $tasks) and merge job $merge (after it)"
}

if [ -n "$resubmit" ]; then
  [ -f "$resubmit/sweep.json" ] || usage_error "--resubmit: '$resubmit' is not a sweep folder"
  sweep=$(cd "$resubmit" && pwd)
  todo=$(python3 "$here/sweep_state.py" "$sweep" --unfinished)
  if [ -z "$todo" ]; then
    myconv_log "every shard of $sweep is complete; nothing to resubmit"
    exit 0
  fi
  submit_array "$sweep" "$todo"
  python3 - "$sweep/sweep.json" <<'PY'
import json, os, sys
s = json.load(open(sys.argv[1]))
s["resubmits"] = s.get("resubmits", 0) + 1
json.dump(s, open(sys.argv[1] + ".tmp", "w"), indent=2)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
PY
  exit 0
fi

[[ "$shards" =~ ^[1-9][0-9]*$ ]] || usage_error "--shards: expected a count, got '$shards'"
[[ "$retries" =~ ^[0-9]+$ ]] || usage_error "--retries: expected a count, got '$retries'"
for a in "${runner_args[@]}"; do
  case "${a%%=*}" in
    --shard | --resume | --output-dir | --plan | --commit)
      usage_error "'$a' after --: submit.sh sets the shards, folders and resumes itself" ;;
  esac
done
[ $cpu_only -eq 1 ] || [ $gpu_given -eq 1 ] || sbatch_args+=(--gpus-per-task=1)

# The programs every task runs: built once here (a --plan of shard 1 builds what is missing).
build_dir=$MYCONV_ROOT/build
for ((i = 0; i < ${#runner_args[@]}; i++)); do
  [ "${runner_args[$i]}" != --build-dir ] || build_dir=${runner_args[$((i + 1))]:-$build_dir}
done
export MYCONV_BIN=${MYCONV_BIN:-} MYOPS_BIN=${MYOPS_BIN:-}
plan_out=$("$MYCONV_ROOT/scripts/run_all_experiments.sh" "${runner_args[@]}" --shard "1/$shards" \
  --plan 2>&1) || { echo "$plan_out" | tail -n 1 >&2; exit 2; }
[ -n "$MYCONV_BIN" ] || [ ! -x "$build_dir/experiments/myconv" ] ||
  MYCONV_BIN=$(cd "$build_dir/experiments" && pwd)/myconv
[ -n "$MYOPS_BIN" ] || [ ! -x "$build_dir/experiments/myops" ] ||
  MYOPS_BIN=$(cd "$build_dir/experiments" && pwd)/myops

sweep=${sweep:-$MYCONV_ROOT/results/slurm_$(date -u +%Y%m%d_%H%M%S)}
if [ -e "$sweep" ] && [ -n "$(ls -A "$sweep" 2>/dev/null)" ]; then
  usage_error "--sweep-dir: '$sweep' exists and is not empty (scripts/slurm/status.sh shows it)"
fi
mkdir -p "$sweep/logs" "$sweep/shards" || usage_error "--sweep-dir: cannot create '$sweep'"
sweep=$(cd "$sweep" && pwd)
mapfile -t margs < <(merge_args "${sbatch_args[@]}")
python3 - "$sweep/sweep.json" "$shards" "$retries" "$MYCONV_ROOT" "$MYCONV_BIN" "$MYOPS_BIN" \
  "${#sbatch_args[@]}" "${sbatch_args[@]}" "${#margs[@]}" "${margs[@]}" -- "${runner_args[@]}" <<'PY'
import datetime, json, sys
a = sys.argv[1:]
path, shards, retries, root, myconv, myops = a[:6]
n = int(a[6]); sb = a[7:7 + n]; rest = a[7 + n:]
m = int(rest[0]); mb = rest[1:1 + m]; runner = rest[1 + m:][1:]
json.dump({"shards": int(shards), "retries": int(retries), "resubmits": 0, "root": root,
           "myconv_bin": myconv or None, "myops_bin": myops or None, "runner_args": runner,
           "sbatch_args": sb, "merge_sbatch_args": mb, "jobs": [],
           "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime(
               "%Y-%m-%dT%H:%M:%SZ")}, open(path, "w"), indent=2)
PY
echo "$plan_out" | sed -n 's/^\[[a-z]*\] plan: /[submit] sweep: /p'  # the runner's tag: its suite's program
submit_array "$sweep" "1-$shards"
myconv_log "sweep folder $sweep; progress: scripts/slurm/status.sh $sweep"
