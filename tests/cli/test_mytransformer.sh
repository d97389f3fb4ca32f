#!/usr/bin/env bash
# The command-line contract of mytransformer (usage: test_mytransformer.sh path/to/mytransformer
# SOURCE_DIR): bad input -> one line on stderr, exit code 2, no output file; a tiny random model
# (a config.json alone) runs a small grid on the CPU with JSON, CSV and --output-file, each case
# with its predicted peak memory (no measured peak, so no ratio, on the CPU); presets, --create,
# --task train, --dump-logits; --problem and --backend as the runner sends them (the listed cases
# of two models round-trip); the HF scripts compile.
set -u
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { passes=$((passes + 1)); echo "ok: $*"; }

cat >"$work/tiny.json" <<'JSON'
{"model_type": "gpt2", "vocab_size": 101, "n_embd": 32, "n_layer": 2, "n_head": 4,
 "n_positions": 64, "layer_norm_epsilon": 1e-05}
JSON
cat >"$work/qwen.json" <<'JSON'
{"model_type": "qwen2", "vocab_size": 103, "hidden_size": 32, "intermediate_size": 48,
 "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
 "max_position_embeddings": 64, "rope_theta": 10000.0}
JSON
cat >"$work/grid.json" <<'JSON'
{"batch_sizes": [1, 2], "input_lengths": [4], "output_length": 3, "num_runs": 2}
JSON
echo '{"batch_sizes": [1,' >"$work/broken.json"
mkdir -p "$work/noconfig" "$work/badweights"
cp "$work/tiny.json" "$work/badweights/config.json"
printf 'garbage' >"$work/badweights/model.safetensors"

# expect_usage_error DESCRIPTION WORD_IN_MESSAGE ARGS...
expect_usage_error() {
  local what=$1 word=$2
  shift 2
  rm -f "$work/out.json" "$work/out.csv"
  "$bin" "$@" --json "$work/out.json" --csv "$work/out.csv" >"$work/stdout" 2>"$work/stderr"
  local rc=$?
  local lines
  lines=$(wc -l <"$work/stderr")
  if [ "$rc" -ne 2 ]; then fail "$what: exit code $rc, expected 2"; cat "$work/stderr"; return; fi
  if [ "$lines" -ne 1 ]; then fail "$what: $lines lines on stderr, expected 1"; cat "$work/stderr"; return; fi
  if ! grep -qi -- "$word" "$work/stderr"; then fail "$what: message lacks '$word': $(cat "$work/stderr")"; return; fi
  if [ -e "$work/out.json" ] || [ -e "$work/out.csv" ]; then fail "$what: wrote an output file"; return; fi
  ok "$what -> $(cat "$work/stderr")"
}

m=(--model "$work/tiny.json" --device cpu)
expect_usage_error "unknown preset" "unknown preset" "${m[@]}" --preset huge
expect_usage_error "unknown implementation" "allowed:" "${m[@]}" --impl nosuch
expect_usage_error "unknown dtype" "fp16" "${m[@]}" --dtype fp64
expect_usage_error "unknown model" "built-in" --model gpt5 --device cpu
expect_usage_error "unknown SDPA backend" "sdpa-backend" "${m[@]}" --sdpa-backend bogus
expect_usage_error "folder without config.json" "config.json" --model "$work/noconfig" --device cpu
expect_usage_error "bad safetensors" "safetensors" --model "$work/badweights" --device cpu
expect_usage_error "missing config file" "cannot read" "${m[@]}" --config-file "$work/none.json"
expect_usage_error "broken config file" "not valid JSON" "${m[@]}" --config-file "$work/broken.json"
expect_usage_error "bad device" "device" "${m[@]/cpu/tpu}"
expect_usage_error "zero output length" "output-length" "${m[@]}" --output_length 0
expect_usage_error "top_p out of range" "top-p" "${m[@]}" --temperature 1 --top_p 1.5
expect_usage_error "pure timing" "timing" "${m[@]}" --timing pure
expect_usage_error "both timing modes" "timing both" "${m[@]}" --timing both
if "$bin" --help | grep -q "pure and both: a usage error"; then ok "--help: --timing real only"; else fail "--help does not say --timing is real only"; fi
expect_usage_error "unknown task" "task" "${m[@]}" --task finetune
expect_usage_error "unknown option" "see --help" "${m[@]}" --batch-sise 2
# --problem and --backend, as scripts/run_all_experiments.sh sends them.
two=(--model "$work/tiny.json,$work/qwen.json" --device cpu)
expect_usage_error "malformed --problem" "--problem" "${two[@]}" --problem mb1in4
expect_usage_error "--problem with a bad name part" "--problem" "${two[@]}" --problem 'mb1in4out2:x'
expect_usage_error "--problem naming another model" "not among" "${two[@]}" \
  --problem 'mb1in4out2:n"gpt2"'
expect_usage_error "--problem naming no model" "built-in" --device cpu --problem 'mb1in4out2:n"gpt9"'
expect_usage_error "--problem with --batch_sizes" "not both" "${two[@]}" --problem mb1in4out2 \
  --batch_sizes 2
expect_usage_error "--problem mixing tasks" "separately" "${two[@]}" --problem mb1in4out2 \
  --problem train_mb1in4
expect_usage_error "--problem against --task" "task" "${two[@]}" --problem mb1in4out2 --task train
expect_usage_error "unknown --backend" "allowed:" "${two[@]}" --backend cudnn
expect_usage_error "two models of one name" "both named" --model "$work/tiny.json,$work/tiny.json" \
  --device cpu
expect_usage_error "--show-config of two models" "one --model" "${two[@]}" --show-config
expect_usage_error "--dump-logits of two models" "one --model" "${two[@]}" \
  --dump-logits "$work/d.json"
rm -f "$work"/missing_*
"$bin" "${m[@]}" --output-file "$work/missing/run" >"$work/stdout" 2>"$work/stderr"
if [ $? -eq 2 ] && [ "$(wc -l <"$work/stderr")" -eq 1 ]; then ok "--output-file to a missing folder"; else fail "--output-file to a missing folder"; fi
"$bin" --create quick_test >"$work/stdout" 2>"$work/stderr"
if [ $? -eq 2 ]; then ok "--create without --output"; else fail "--create without --output"; fi

# A small grid on a tiny random GPT-2: two configs, JSON and CSV.
if "$bin" "${m[@]}" --config-file "$work/grid.json" --json "$work/run.json" --csv "$work/run.csv" \
    --strict >"$work/stdout" 2>"$work/stderr"; then
  if python3 - "$work/run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rs = d["results"]
assert len(rs) == 2, len(rs)
for r in rs:
    assert r["suite"] == "transformer" and r["status"] == "passed", r["reason"]
    m = r["metrics"]
    for k in ("ttft_ms", "decode_ms_per_token_mean", "decode_ms_per_token_median",
              "decode_ms_per_token_p90", "decode_total_ms", "total_latency_ms",
              "prefill_tokens_per_s", "decode_tokens_per_s", "e2e_tokens_per_s",
              "kv_cache_bytes", "weight_bytes", "host_peak_rss_bytes"):
        assert k in m, k
    assert m["num_runs"] == 2
    # The prediction from the config: its parts add up; weights and KV cache are the measured
    # ones; on the CPU the allocator keeps no peak, so there is no ratio.
    parts = ("predicted_weight_bytes", "predicted_kv_cache_bytes", "predicted_activation_bytes",
             "predicted_workspace_bytes")
    for k in parts + ("predicted_peak_bytes",):
        assert isinstance(m.get(k), int), (k, m.get(k))
    assert m["predicted_peak_bytes"] == sum(m[k] for k in parts), m
    assert m["predicted_weight_bytes"] == m["weight_bytes"], m
    assert m["predicted_kv_cache_bytes"] == m["kv_cache_bytes"], m
    assert m["predicted_activation_bytes"] > 0 and m["predicted_workspace_bytes"] == 0, m
    assert "peak_vs_prediction" not in m and "peak_allocated_bytes" not in m, m
    assert r["extra"]["predicted_peak_at"].startswith("check recompute"), r["extra"]
assert d["system"]["model"]["arch"] == "gpt2"
assert [r["problem"] for r in rs] == ["mb1in4out3", "mb2in4out3"]
PY
  then ok "tiny grid: JSON records"; else fail "tiny grid: JSON records"; fi
  if grep -qE "^\[2/2\] elapsed [0-9:]{8} eta [0-9:]{8} " "$work/stdout"; then ok "progress lines"; else fail "progress lines"; fi
  if [ "$(grep -c '^    memory        predicted .* MiB (weights .* + KV cache .* + activations .*, at check recompute' "$work/stdout")" -eq 2 ] &&
      grep -q "predicted MiB" "$work/stdout"; then
    ok "memory line per case and in the summary"
  else
    fail "memory line per case and in the summary: $(grep -i memory "$work/stdout")"
  fi
  if [ "$(wc -l <"$work/run.csv")" -eq 3 ]; then ok "CSV rows"; else fail "CSV rows"; fi
else
  fail "tiny grid run: $(tail -3 "$work/stderr") $(tail -5 "$work/stdout")"
fi

# --output-file PREFIX; Qwen2 in bf16 with sampling; training.
if "$bin" --model "$work/qwen.json" --device cpu --batch_sizes 2 --input_lengths 5 --output_length 3 \
    --num_runs 1 --dtype bf16 --temperature 0.7 --top_p 0.9 --output-file "$work/pre" --strict \
    >"$work/stdout" 2>"$work/stderr" && ls "$work"/pre_*.json "$work"/pre_*.csv >/dev/null 2>&1; then
  ok "--output-file, qwen2 bf16 sampling"
else
  fail "--output-file, qwen2 bf16 sampling: $(tail -3 "$work/stderr") $(tail -5 "$work/stdout")"
fi
if "$bin" "${m[@]}" --task train --batch_sizes 2 --input_lengths 6 --num_runs 1 --strict \
    --json "$work/train.json" >"$work/stdout" 2>"$work/stderr" &&
    python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; m=r['metrics']; assert r['status']=='passed' and 'backward_ms' in m; assert m['predicted_peak_bytes'] == m['predicted_weight_bytes'] + m.get('predicted_gradient_bytes', 0) + m['predicted_activation_bytes'] + m['predicted_workspace_bytes'] and 'predicted_kv_cache_bytes' not in m, m" "$work/train.json"; then
  ok "--task train"
else
  fail "--task train: $(tail -3 "$work/stderr") $(tail -5 "$work/stdout")"
fi
# Past max_batch_input_product: skipped, the grid goes on.
if "$bin" "${m[@]}" --batch_sizes 1,4 --input_lengths 4 --output_length 2 --num_runs 1 \
    --max_batch_input_product 8 --json "$work/skip.json" >"$work/stdout" 2>"$work/stderr" &&
    python3 -c "import json,sys; rs=json.load(open(sys.argv[1]))['results']; assert [r['status'] for r in rs]==['passed','skipped'], rs; assert 'max_batch_input_product' in rs[1]['reason']" "$work/skip.json"; then
  ok "max_batch_input_product skips"
else
  fail "max_batch_input_product skips: $(tail -3 "$work/stderr")"
fi
if "$bin" "${m[@]}" --input_lengths 6 --batch_sizes 2 --output_length 4 --dump-logits "$work/dump.json" \
    >"$work/stdout" 2>"$work/stderr" &&
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['generated'][0])==4 and len(d['prefill_logits_row0'])==6 and len(d['prefill_last_logits'][1])==101" "$work/dump.json"; then
  ok "--dump-logits"
else
  fail "--dump-logits: $(tail -3 "$work/stderr")"
fi
# --list-cases of two models round-trips through --problem: each listed case, as the runner sends
# it (descriptor, :n"model", --backend), lists exactly that case again (the same record and
# reproducing command); one of them runs with the runner's other options.
if "$bin" "${two[@]}" --config-file "$work/grid.json" --list-cases >"$work/cases.jsonl" 2>"$work/stderr" &&
    python3 - "$bin" "$work" <<'PY'
import json, subprocess, sys
bin, work = sys.argv[1], sys.argv[2]
two = ["--model", f"{work}/tiny.json,{work}/qwen.json", "--device", "cpu",
       "--config-file", f"{work}/grid.json"]
cases = [json.loads(l) for l in open(f"{work}/cases.jsonl")]
assert [(c["problem"], c["name"]) for c in cases] == [
    ("mb1in4out3", "tiny"), ("mb2in4out3", "tiny"), ("mb1in4out3", "qwen"),
    ("mb2in4out3", "qwen")], cases
for c in cases:
    desc = f'{c["problem"]}:n"{c["name"]}"'
    out = subprocess.run([bin] + two + ["--problem", desc, "--backend", c["backend"],
                                        "--list-cases"], capture_output=True, text=True, check=True)
    again = [json.loads(l) for l in out.stdout.splitlines()]
    assert again == [c], (desc, again)
    assert c["command"].startswith(f"mytransformer --model {work}/"), c["command"]
PY
then ok "--list-cases round-trips through --problem and --backend"; else fail "--problem round trip: $(tail -3 "$work/stderr")"; fi
if "$bin" "${two[@]}" --problem 'mb2in4out3:n"qwen"' --backend libtorch_eager --num_runs 1 \
    --json "$work/one.json" --csv "$work/one.csv" --no-source-diff --warmup 1 --min-iters 3 \
    --min-time-ms 0 --max-time-ms 20 --strict >"$work/stdout" 2>"$work/stderr" &&
    python3 - "$work/one.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
(r,) = d["results"]
assert (r["problem"], r["name"], r["backend"], r["status"]) == (
    "mb2in4out3", "qwen", "libtorch_cpu", "passed"), r  # the old name maps to the new
assert [m["name"] for m in d["system"]["models"]] == ["qwen"], d["system"]["models"]
assert d["system"]["model"]["arch"] == "qwen2"
assert d["system"]["grid"]["problems"] == ['mb2in4out3:n"qwen"'], d["system"]["grid"]
assert "batch_sizes" not in d["system"]["grid"]
PY
then ok "--problem with a name runs that model's case"; else fail "--problem run: $(tail -3 "$work/stderr")"; fi
if "$bin" --show-presets | grep -q quick_test; then ok "--show-presets"; else fail "--show-presets"; fi
if "$bin" --create quick_test --output "$work/q.json" >/dev/null &&
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['batch_sizes']==[1,2] and d['num_runs']==1 and d['output_length']==20" "$work/q.json"; then
  ok "--create"
else
  fail "--create"
fi
if "$bin" --list-backends | grep -q libtorch_graph; then ok "--list-backends"; else fail "--list-backends"; fi
if python3 -m py_compile "$src/scripts/references/hf_reference.py" "$src/scripts/references/hf_agreement.py"; then
  ok "HF scripts compile"
else
  fail "HF scripts compile"
fi

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
