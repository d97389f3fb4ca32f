#!/usr/bin/env bash
# run_all_experiments.sh --shard I/N with scripts/merge_results.py, and --gpus with fake GPUs
# (usage: test_run_all_shard.sh path/to/myconv), on 4 tiny problems x libtorch_cpu, onednn_cpu
# and cudnn (skipped without a GPU): shards 1/2 + 2/2 merged = the plain run (same cases in the
# same order, same statuses), disjoint; --gpus all on one fake GPU (a nvidia-smi stand-in,
# MYCONV_NVIDIA_SMI) = the plain run, with the GPU named in each GPU result and one progress line
# per case; --gpus 2 on two fake GPUs runs the GPU cases from one queue both take from; --plan;
# bad --shard and --gpus without a GPU exit 2 with one line and leave no folder.
# The fake GPUs' UUIDs hide any real GPU from the workers, so the plain runs here hide them too
# (CUDA_VISIBLE_DEVICES=""): the statuses compare on a GPU host as well.
set -u
myconv=$(realpath "$1")
# shellcheck source=common.sh
source "$(dirname "$0")/common.sh"
export MYCONV_BIN=$myconv
unset CUDA_VISIBLE_DEVICES

cat >"$work/tiny.txt" <<'EOF'
mb1ic2ih8oc2kh3n"p1"
mb1ic2ih9oc2kh3n"p2"
mb1ic2ih10oc2kh3n"p3"
mb2ic4ih12oc4kh3n"p4"
EOF
grid=(--quick --shapes "$work/tiny.txt" --backends libtorch_cpu,onednn_cpu,cudnn)
fake_smi() {  # fake_smi N: a nvidia-smi that lists N GPUs
  local f="$work/smi$1"
  { echo '#!/bin/sh'; for ((g = 0; g < $1; g++)); do
      echo "echo '$g, GPU-0000000$g-fake-4000-8000-00000000000$g, Fake GPU'"; done; } >"$f"
  chmod +x "$f"
  echo "$f"
}
one_line_exit2() {  # one_line_exit2 WHAT CMD...: exit 2, one line on stderr, nothing in out/
  local what=$1
  shift
  mkdir -p "$work/e"
  "$@" --output-dir "$work/e" >/dev/null 2>"$work/err"
  local rc=$?
  if [ $rc -eq 2 ] && [ "$(wc -l <"$work/err")" -eq 1 ] && [ -z "$(ls -A "$work/e")" ]; then
    ok "$what -> $(cat "$work/err")"
  else
    fail "$what: exit $rc, $(ls "$work/e") $(cat "$work/err")"
  fi
}

CUDA_VISIBLE_DEVICES="" "$runner" "${grid[@]}" --output-dir "$work/plain" >"$work/plain.log" 2>&1 ||
  fail "plain run exited non-zero"
for i in 1 2; do
  CUDA_VISIBLE_DEVICES="" "$runner" "${grid[@]}" --shard "$i/2" --output-dir "$work/shards" \
    >"$work/shard$i.log" 2>&1 || fail "shard $i/2 exited non-zero"
done
"$root/scripts/merge_results.py" "$work"/shards/*/ --output-dir "$work/merged" >"$work/merge.log" 2>&1 ||
  fail "merge exited non-zero: $(tail -2 "$work/merge.log")"
[ -s "$work/merged/report.md" ] && ok "merged report.md" || fail "no merged report.md"
MYCONV_NVIDIA_SMI=$(fake_smi 1) "$runner" "${grid[@]}" --gpus all --output-dir "$work/g1" \
  >"$work/g1.log" 2>&1 || fail "--gpus all exited non-zero: $(tail -3 "$work/g1.log")"
MYCONV_NVIDIA_SMI=$(fake_smi 2) "$runner" "${grid[@]}" --gpus 2 --output-dir "$work/g2" \
  >"$work/g2.log" 2>&1 || fail "--gpus 2 exited non-zero: $(tail -3 "$work/g2.log")"

if python3 - "$work" <<'PY'; then
import glob, json, os, re, sys
w = sys.argv[1]
def load(pattern):
    return json.load(open(glob.glob(os.path.join(w, pattern))[0]))
key = lambda r: (r["problem"], r["name"], r["backend"], r["dtype"], r["status"])
plain = load("plain/*/results.json")
want = [key(r) for r in plain["results"]]
assert len(want) == 12, f"{len(want)} plain cases"
# Shards: disjoint, together the list, recorded in run.json; merged = plain.
s1, s2 = (load(f"shards/*shard{i}of2/results.json") for i in (1, 2))
k1, k2 = {key(r) for r in s1["results"]}, {key(r) for r in s2["results"]}
assert k1 and k2 and not k1 & k2 and k1 | k2 == set(want), "shards: not a partition"
c1 = load("shards/*shard1of2/run.json")["shard"]
assert c1["index"] == 1 and c1["count"] == 2 and c1["cases_total"] == 12 and c1["cost"] == "flop"
merged = json.load(open(os.path.join(w, "merged", "results.json")))
assert [key(r) for r in merged["results"]] == want, "merged != plain"
assert merged["run"]["complete"] and len(merged["systems"]) == 2
# --gpus all on one fake GPU = plain; every GPU result names the GPU; one line per case.
g1 = load("g1/*/results.json")
assert [key(r) for r in g1["results"]] == want, "--gpus all != plain"
for r in g1["results"]:
    if r["device"] == "cuda":
        assert r["gpu"] == {"index": 0, "uuid": "GPU-00000000-fake-4000-8000-000000000000",
                            "name": "Fake GPU"}, r.get("gpu")
    else:
        assert "gpu" not in r, r
assert [x["name"] for x in g1["run"]["workers"]] == ["gpu0", "cpu"], g1["run"]["workers"]
cores = [set(x["cores"]) for x in g1["run"]["workers"]]
assert len(os.sched_getaffinity(0)) < 2 or not cores[0] & cores[1], f"shared cores {cores}"
log = open(os.path.join(w, "g1.log")).read()
lines = re.findall(r"^\[(\d+)/12\] elapsed \d\d:\d\d:\d\d eta \S+ \S+ \S+: .* \[(gpu0|cpu)\]$", log, re.M)
assert sorted(int(n) for n, _ in lines) == list(range(1, 13)), log
assert os.path.exists(glob.glob(os.path.join(w, "g1/*/report.md"))[0])
# --gpus 2: the 4 cudnn cases from the queue both GPU workers share, each problem on the GPU of
# the worker that claimed it (RUN/workers/queue.jsonl), each once.
g2 = load("g2/*/results.json")
assert [key(r) for r in g2["results"]] == want, "--gpus 2 != plain"
by_gpu = {}
for r in g2["results"]:
    if r["device"] == "cuda":
        by_gpu.setdefault(r["gpu"]["index"], []).append(r["problem"])
assert set(by_gpu) <= {0, 1} and sum(map(len, by_gpu.values())) == 4, by_gpu
claims = [json.loads(l) for l in open(glob.glob(os.path.join(w, "g2/*/workers/queue.jsonl"))[0])]
assert sorted(c["problem"] for c in claims) == sorted({r["problem"] for r in g2["results"]}), claims
for c in claims:
    assert c["problem"] in by_gpu[int(c["worker"][3:])], (c, by_gpu)
assert [x.get("queue") for x in g2["run"]["workers"]] == ["shared", "shared", "own"], g2["run"]
print("ok: shards 1/2 + 2/2 merged = plain (12 cases); --gpus all (1 fake GPU) = plain, gpu "
      f"recorded, 12 progress lines; --gpus 2 shares the GPU cases {by_gpu}")
PY
  passes=$((passes + 1))
else
  fail "shard / gpus runs against the plain run"
fi

"$runner" "${grid[@]}" --shard 2/3 --plan >"$work/plan.txt" 2>&1 &&
  grep -q "shard 2/3: .* <- this one" "$work/plan.txt" && [ "$(grep -c '^\[myconv\] shard' "$work/plan.txt")" -eq 3 ] &&
  ok "--plan: $(head -1 "$work/plan.txt")" || { fail "--plan"; cat "$work/plan.txt"; }
one_line_exit2 "--shard 3/2" "$runner" "${grid[@]}" --shard 3/2
one_line_exit2 "--gpus all without a GPU" env MYCONV_NVIDIA_SMI=/nonexistent "$runner" "${grid[@]}" --gpus all
one_line_exit2 "--gpus 3 of 2" env MYCONV_NVIDIA_SMI="$(fake_smi 2)" "$runner" "${grid[@]}" --gpus 3

finish
