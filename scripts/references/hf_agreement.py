#!/usr/bin/env python3
"""Does mytransformer compute what Hugging Face transformers computes? For each architecture
(gpt2, qwen2, llama): a random-init transformers model (every parameter then perturbed, so that
biases and norm weights are not their trivial initial values) is saved with save_pretrained
(config.json + model.safetensors), mytransformer loads that folder and writes its prefill logits
and greedy tokens (--dump-logits), and transformers runs the same prompt: the prefill logits must
agree within the dtype's tolerance and the first greedy tokens must be identical.

Usage (GPU host, torch + transformers in /opt/torch/.venv):
  python3 scripts/references/hf_agreement.py --mytransformer build/experiments/mytransformer \
      --device cuda
  python3 scripts/references/hf_agreement.py --size full --arch gpt2 qwen2 --dtype fp32 --tokens 32
Exit status 0 when every architecture agrees, 1 otherwise.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))  # the checkout (or the install's share/myconv)

# Tiny configs (fast anywhere) and the published ones (what the benchmark runs).
CONFIGS = {
    ("gpt2", "tiny"): {"model_type": "gpt2", "vocab_size": 1000, "n_embd": 64, "n_layer": 2,
                       "n_head": 4, "n_positions": 256},
    ("qwen2", "tiny"): {"model_type": "qwen2", "vocab_size": 1000, "hidden_size": 64,
                        "intermediate_size": 128, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "num_key_value_heads": 2,
                        "max_position_embeddings": 256, "rope_theta": 1000000.0,
                        "tie_word_embeddings": True},
    ("llama", "tiny"): {"model_type": "llama", "vocab_size": 1000, "hidden_size": 64,
                        "intermediate_size": 128, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 16,
                        "max_position_embeddings": 256, "rope_theta": 500000.0,
                        "rope_scaling": {"rope_type": "llama3", "factor": 32.0,
                                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                         "original_max_position_embeddings": 64},
                        "tie_word_embeddings": True},
}
FULL = {"gpt2": "gpt2", "qwen2": "qwen2-0.5b", "llama": "llama-3.2-1b"}
TOLERANCE = {"fp32": 1e-3, "bf16": 5e-2, "fp16": 2e-2}  # of the logits' max magnitude
DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def config_for(arch, size, binary):
    if size == "tiny":
        return dict(CONFIGS[(arch, size)])
    text = subprocess.run([binary, "--model", FULL[arch], "--device", "cpu", "--show-config"],
                          check=True, capture_output=True, text=True).stdout
    return json.loads(text)


def check(arch, args, torch, transformers, work):
    folder = os.path.join(work, arch)
    cfg = config_for(arch, args.size, args.mytransformer)
    config = transformers.AutoConfig.for_model(**cfg)
    torch.manual_seed(args.seed)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():
        for p in model.parameters():  # biases and norms off their initial 0 and 1
            p.add_(torch.randn_like(p) * 0.02)
    model.save_pretrained(folder)  # config.json + model.safetensors

    dump = os.path.join(work, arch + ".json")
    cmd = [args.mytransformer, "--model", folder, "--device", args.device, "--dtype", args.dtype,
           "--batch-size", str(args.batch), "--input-length", str(args.input_length),
           "--output-length", str(args.tokens), "--seed", str(args.seed), "--dump-logits", dump]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(dump) as f:
        ours = json.load(f)

    dtype = getattr(torch, DTYPES[args.dtype])
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
    model = model.to(args.device).eval()
    prompt = torch.tensor(ours["prompt"], device=args.device)
    with torch.inference_mode():
        logits = model(input_ids=prompt).logits.float().cpu()
        # The correct greedy loop with transformers' cache (no EOS stop, exact length).
        out = model(input_ids=prompt, use_cache=True)
        past, token = out.past_key_values, out.logits[:, -1, :].argmax(-1)
        tokens = [token]
        for _ in range(args.tokens - 1):
            out = model(input_ids=token[:, None], past_key_values=past, use_cache=True)
            past, token = out.past_key_values, out.logits[:, -1, :].argmax(-1)
            tokens.append(token)
        hf_tokens = torch.stack(tokens, 1).cpu().tolist()

    row0 = torch.tensor(ours["prefill_logits_row0"])
    last = torch.tensor(ours["prefill_last_logits"])
    scale = max(1.0, logits.abs().max().item())
    err_row0 = (row0 - logits[0]).abs().max().item()
    err_last = (last - logits[:, -1, :]).abs().max().item()
    tol = TOLERANCE[args.dtype] * scale
    same_tokens = [a == b for a, b in zip(ours["generated"], hf_tokens)]
    first_diff = []
    for a, b in zip(ours["generated"], hf_tokens):
        first_diff.append(next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None))
    ok = err_row0 <= tol and err_last <= tol and all(same_tokens)
    graph_text = ""
    if "generated_graph" in ours:  # libtorch_graph's decode step, on CUDA
        same_graph = [a == b for a, b in zip(ours["generated_graph"], hf_tokens)]
        graph_diff = [next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
                      for a, b in zip(ours["generated_graph"], hf_tokens)]
        ok = ok and all(same_graph)
        graph_text = (f"; libtorch_graph's greedy tokens "
                      f"{'identical' if all(same_graph) else 'differ'} (first difference per "
                      f"row: {graph_diff})")
    if "generated_own" in ours:  # own_cuda's decode step, on CUDA
        same_own = [a == b for a, b in zip(ours["generated_own"], hf_tokens)]
        own_diff = [next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
                    for a, b in zip(ours["generated_own"], hf_tokens)]
        ok = ok and all(same_own)
        graph_text += (f"; own_cuda's greedy tokens "
                       f"{'identical' if all(same_own) else 'differ'} (first difference per "
                       f"row: {own_diff})")
    print(f"{arch:6} {args.size:5} {args.dtype}: prefill logits max |diff| {err_row0:.3e} (all "
          f"positions, row 0), {err_last:.3e} (last position, every row), tolerance {tol:.3e}; "
          f"greedy tokens {'identical' if all(same_tokens) else 'differ'} "
          f"(first difference per row: {first_diff}){graph_text} -> "
          f"{'AGREE' if ok else 'DISAGREE'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mytransformer", default=os.path.join(SOURCE, "build", "experiments",
                                                            "mytransformer"))
    ap.add_argument("--arch", nargs="+", default=["gpt2", "qwen2", "llama"],
                    choices=["gpt2", "qwen2", "llama"])
    ap.add_argument("--size", choices=("tiny", "full"), default="tiny")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="fp32", choices=sorted(DTYPES))
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--input_length", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="keep the checkpoints and dumps in this folder")
    args = ap.parse_args()
    if not os.access(args.mytransformer, os.X_OK):
        print(f"hf_agreement.py: error: {args.mytransformer} is not an executable "
              "(--mytransformer)", file=sys.stderr)
        return 2

    import torch
    import transformers

    print(f"transformers {transformers.__version__}, torch {torch.__version__}, "
          f"mytransformer {args.mytransformer}")
    work = args.keep or tempfile.mkdtemp(prefix="hf_agreement_")
    os.makedirs(work, exist_ok=True)
    results = [check(arch, args, torch, transformers, work) for arch in args.arch]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
