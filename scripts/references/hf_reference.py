#!/usr/bin/env python3
"""The external reference of mytransformer: Hugging Face transformers on the same model, the same
grid and random prompts, writing result records in mytransformer's schema (results/README.md,
suite "transformer", backend "hf_transformers"), so that one report reads both.

Three ways of timing, chosen with --method (every one by default, one record each):
  generate  the seed's way: TTFT from model.generate(max_new_tokens=1), the whole generation from
            model.generate(max_new_tokens=N); decode = (total - TTFT) / (N - 1). It re-runs prefill
            to time decode (what mytransformer never does); kept to compare with the seed's numbers.
  manual    the correct loop: one forward over the prompt with use_cache=True (prefill + first
            token = TTFT), then one forward per token from the KV cache, each step timed with CUDA
            events (host clock on the CPU) without synchronizing between steps.
  static_graph  what a Python user reaches for to decode fast: a transformers StaticCache, prefill
            eager into it, and the decode step (ids and cache_position in static tensors)
            captured once per case into a CUDA graph (torch.cuda.graph, after warm-up steps on a
            side stream) and replayed per token; timed as manual. CUDA only.

Usage (GPU host, torch + transformers in /opt/torch/.venv):
  python3 scripts/references/hf_reference.py --model DIR|config.json|gpt2 --preset quick_test \
      --device cuda --dtype fp16 --output results/hf_quick.json
A built-in name (gpt2, qwen2-0.5b, ...) takes its config.json from mytransformer --show-config
(--mytransformer BIN; random weights from --seed).
"""
import argparse
import datetime
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))  # the checkout (or the install's share/myconv)
DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
SEED_KEYS = ("batch_sizes", "input_lengths", "output_length", "num_runs", "temperature", "top_p",
             "max_batch_input_product")


def fail(msg):
    print(f"hf_reference.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load_grid(args):
    path = os.environ.get("MYCONV_TRANSFORMER_PRESETS",
                          os.path.join(SOURCE, "experiments", "transformer", "presets.json"))
    with open(path) as f:
        presets = json.load(f)
    name = args.preset or "default"
    if name not in presets or name.startswith("_"):
        fail(f"unknown preset '{name}'")
    grid = {k: presets[name][k] for k in SEED_KEYS if k in presets[name]}
    grid["name"] = name
    if args.config_file:
        with open(args.config_file) as f:
            grid.update({k: v for k, v in json.load(f).items() if k in SEED_KEYS})
        grid["name"] = args.config_file
    for key in ("batch_sizes", "input_lengths"):
        if getattr(args, key):
            grid[key] = [int(x) for x in getattr(args, key).split(",")]
    for key in ("output_length", "num_runs", "temperature", "top_p", "max_batch_input_product"):
        if getattr(args, key) is not None:
            grid[key] = getattr(args, key)
    return grid


def make_model(args, torch, transformers):
    dtype = getattr(torch, DTYPES[args.dtype])
    spec = args.model
    if os.path.isdir(spec) and any(os.path.exists(os.path.join(spec, f)) for f in
                                   ("model.safetensors", "model.safetensors.index.json")):
        model = transformers.AutoModelForCausalLM.from_pretrained(spec, dtype=dtype)
        source = f"checkpoint {spec}"
    else:
        if os.path.isdir(spec):
            config_path = os.path.join(spec, "config.json")
        elif os.path.isfile(spec):
            config_path = spec
        else:  # a built-in name: mytransformer's config.json for it
            text = subprocess.run([args.mytransformer, "--model", spec, "--device", "cpu",
                                   "--show-config"], check=True, capture_output=True,
                                  text=True).stdout
            tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
            tmp.write(text)
            tmp.close()
            config_path = tmp.name
        with open(config_path) as f:
            config = transformers.AutoConfig.for_model(**json.load(f))
        torch.manual_seed(args.seed)
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
        source = f"random init (torch seed {args.seed}) from {spec}"
    return model.to(args.device).eval(), source


def summary(values):
    v = sorted(values)
    if not v:
        return None
    q = lambda p: v[0] if len(v) == 1 else v[int(round(p * (len(v) - 1)))]
    mean = statistics.fmean(v)
    sd = statistics.stdev(v) if len(v) > 1 else 0.0
    return {"median": statistics.median(v), "min": v[0], "mean": mean, "max": v[-1],
            "p10": q(0.1), "p90": q(0.9), "stddev": sd, "cv": sd / mean if mean else 0.0,
            "samples": len(v), "outliers": 0, "outlier_rule": "none"}


class Clock:
    """Step marks: CUDA events on the current stream, or the host clock on the CPU."""

    def __init__(self, torch, cuda):
        self.torch, self.cuda, self.marks = torch, cuda, []

    def mark(self):
        if self.cuda:
            e = self.torch.cuda.Event(enable_timing=True)
            e.record()
            self.marks.append(e)
        else:
            self.marks.append(time.perf_counter())

    def intervals_ms(self):
        if self.cuda:
            self.marks[-1].synchronize()
            return [a.elapsed_time(b) for a, b in zip(self.marks, self.marks[1:])]
        return [(b - a) * 1e3 for a, b in zip(self.marks, self.marks[1:])]


def pick(torch, logits, grid, generator):
    if grid.get("temperature", 0) <= 0:
        return logits.argmax(-1)
    scores = logits.float() / grid["temperature"]
    top_p = grid.get("top_p", 1.0)
    if top_p < 1.0:
        sorted_scores, index = torch.sort(scores, descending=False)
        remove = sorted_scores.softmax(-1).cumsum(-1) <= (1 - top_p)
        remove[..., -1:] = False
        scores = scores.masked_fill(remove.scatter(1, index, remove), float("-inf"))
    return torch.multinomial(scores.softmax(-1), 1, generator=generator).squeeze(1)


def manual_run(torch, model, prompt, n, grid, cuda, seed):
    """Prefill + first token, then n - 1 steps from the cache; times of each."""
    generator = torch.Generator(device=prompt.device).manual_seed(seed)
    clock = Clock(torch, cuda)
    clock.mark()
    out = model(input_ids=prompt, use_cache=True, logits_to_keep=1)
    token = pick(torch, out.logits[:, -1, :], grid, generator)
    past = out.past_key_values
    clock.mark()
    for _ in range(n - 1):
        out = model(input_ids=token[:, None], past_key_values=past, use_cache=True)
        past = out.past_key_values
        token = pick(torch, out.logits[:, -1, :], grid, generator)
        clock.mark()
    ms = clock.intervals_ms()
    return ms[0], ms[1:]


def make_static_cache(transformers, model, b, max_len, device):
    """A StaticCache of max_len positions for b rows: the keyword arguments of transformers 4.4x
    where they are taken, else 5.x's (batch, device and dtype taken from the first update)."""
    try:
        return transformers.StaticCache(config=model.config, max_batch_size=b,
                                        max_cache_len=max_len, device=device, dtype=model.dtype)
    except TypeError:
        return transformers.StaticCache(config=model.config, max_cache_len=max_len)


class StaticGraphDecoder:
    """The decode step over a StaticCache captured into one CUDA graph: replay() reads the token
    ids and the position from static tensors and writes the static logits."""

    def __init__(self, torch, transformers, model, b, max_len, device):
        self.torch, self.model = torch, model
        self.cache = make_static_cache(transformers, model, b, max_len, device)
        self.ids = torch.zeros((b, 1), dtype=torch.long, device=device)
        self.pos = torch.zeros((1,), dtype=torch.long, device=device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # lazy allocations and autotuning before the capture
            for _ in range(3):
                self.step()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logits = self.step()
        self.cache.reset()

    def step(self):
        return self.model(input_ids=self.ids, past_key_values=self.cache,
                          cache_position=self.pos, use_cache=True).logits[:, -1, :]

    def prefill(self, prompt):
        self.cache.reset()
        n = prompt.shape[1]
        return self.model(input_ids=prompt, past_key_values=self.cache, use_cache=True,
                          cache_position=self.torch.arange(n, device=prompt.device),
                          logits_to_keep=1).logits[:, -1, :]

    def replay(self, token, position):
        self.ids.copy_(token[:, None])
        self.pos.fill_(position)
        self.graph.replay()
        return self.logits


def static_graph_run(torch, decoder, prompt, n, grid, cuda, seed):
    """Prefill into the static cache + first token, then n - 1 graph replays; times of each."""
    generator = torch.Generator(device=prompt.device).manual_seed(seed)
    clock = Clock(torch, cuda)
    clock.mark()
    token = pick(torch, decoder.prefill(prompt), grid, generator)
    clock.mark()
    for i in range(n - 1):
        token = pick(torch, decoder.replay(token, prompt.shape[1] + i), grid, generator)
        clock.mark()
    ms = clock.intervals_ms()
    return ms[0], ms[1:]


def generate_run(torch, model, prompt, n, grid, cuda):
    """The seed's way: a 1-token generate for TTFT, an n-token generate for the total."""
    sample = grid.get("temperature", 0) > 0
    kwargs = dict(do_sample=sample, min_new_tokens=n, pad_token_id=0, eos_token_id=None)
    if sample:
        kwargs.update(temperature=grid["temperature"], top_p=grid.get("top_p", 1.0))

    def timed(tokens):
        if cuda:
            torch.cuda.synchronize()
        t = time.perf_counter()
        model.generate(prompt, max_new_tokens=tokens, **dict(kwargs, min_new_tokens=tokens))
        if cuda:
            torch.cuda.synchronize()
        return (time.perf_counter() - t) * 1e3

    ttft = timed(1)
    total = timed(n)
    per = (total - ttft) / (n - 1) if n > 1 else 0.0
    return ttft, [per] * (n - 1)


def metrics_of(b, n_in, n_out, runs):
    ttft = [r[0] for r in runs]
    dec_total = [sum(r[1]) for r in runs]
    total = [a + d for a, d in zip(ttft, dec_total)]
    steps = sorted(s for r in runs for s in r[1])
    m = {"num_runs": len(runs), "ttft_ms": statistics.fmean(ttft),
         "ttft_ms_std": statistics.stdev(ttft) if len(ttft) > 1 else 0.0,
         "decoded_tokens_per_row": n_out - 1}
    if steps:
        m["decode_ms_per_token_mean"] = statistics.fmean(steps)
        m["decode_ms_per_token_median"] = statistics.median(steps)
        m["decode_ms_per_token_p90"] = steps[min(len(steps) - 1, int(round(0.9 * (len(steps) - 1))))]
        m["decode_ms_per_token_std"] = statistics.stdev(steps) if len(steps) > 1 else 0.0
    m["decode_total_ms"] = statistics.fmean(dec_total)
    m["decode_total_ms_std"] = statistics.stdev(dec_total) if len(dec_total) > 1 else 0.0
    m["total_latency_ms"] = statistics.fmean(total)
    m["total_latency_ms_std"] = statistics.stdev(total) if len(total) > 1 else 0.0
    if m["ttft_ms"] > 0:
        m["prefill_tokens_per_s"] = b * n_in / (m["ttft_ms"] / 1e3)
    if n_out > 1 and m["decode_total_ms"] > 0:
        m["decode_tokens_per_s"] = b * (n_out - 1) / (m["decode_total_ms"] / 1e3)
    if m["total_latency_ms"] > 0:
        m["e2e_tokens_per_s"] = b * n_out / (m["total_latency_ms"] / 1e3)
    return m, summary(total)


def model_name(spec):
    """The name mytransformer gives the model of a --model spec (its records' `name`): a folder's
    name, a config file's stem, else the spec (a built-in name)."""
    if os.path.isdir(spec):
        return os.path.basename(spec) or spec
    if os.path.isfile(spec):
        return os.path.splitext(os.path.basename(spec))[0]
    return spec


def record(method, args, b, n_in, n_out):
    return {"suite": "transformer", "backend": "hf_transformers", "device": args.device,
            "problem": f"mb{b}in{n_in}out{n_out}", "name": model_name(args.model),
            "dtype": args.dtype,
            "status": "passed", "reason": "", "algorithm": method, "workspace_bytes": None,
            "compile_time_ms": None, "first_run_ms": None, "cpu_time_ms": None,
            "gpu_time_ms": None, "total_time_ms": None, "thread_cpu_time_ms": None,
            "stop_reason": "max_iters", "timing_mode": "real", "runs_per_sample": 1,
            "cold_cache": False, "clocks": None, "throttled": None, "correctness": None,
            "flop": 0, "bytes": 0, "gflop_per_s": None, "gbyte_per_s": None,
            "params": {"task": "generate", "batch_size": b, "input_length": n_in,
                       "output_length": n_out, "dtype": args.dtype,
                       "model": model_name(args.model)},
            "extra": {}, "metrics": {},
            "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="fp16", choices=sorted(DTYPES))
    ap.add_argument("--preset")
    ap.add_argument("--config-file")
    ap.add_argument("--batch_sizes")
    ap.add_argument("--input_lengths")
    ap.add_argument("--output_length", type=int)
    ap.add_argument("--num_runs", type=int)
    ap.add_argument("--temperature", type=float)
    ap.add_argument("--top_p", type=float)
    ap.add_argument("--max_batch_input_product", type=int)
    ap.add_argument("--method", choices=("generate", "manual", "static_graph", "both", "all"),
                    default="all", help="both: generate and manual; all: the three")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--output", required=True, help="JSON file (mytransformer's schema)")
    ap.add_argument("--mytransformer", default=os.path.join(SOURCE, "build", "experiments",
                                                            "mytransformer"))
    args = ap.parse_args()
    if os.path.dirname(args.output) and not os.path.isdir(os.path.dirname(args.output)):
        fail(f"--output: folder '{os.path.dirname(args.output)}' does not exist")
    grid = load_grid(args)

    import torch
    import transformers

    cuda = args.device.startswith("cuda")
    model, source = make_model(args, torch, transformers)
    vocab = model.config.vocab_size
    methods = {"both": ["generate", "manual"],
               "all": ["generate", "manual", "static_graph"]}.get(args.method, [args.method])
    if not cuda and "static_graph" in methods:
        if args.method == "static_graph":
            fail("--method static_graph: CUDA graphs need --device cuda")
        methods.remove("static_graph")
    doc = {"schema_version": 2,
           "system": {"host": socket.gethostname(),
                      "utc_time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                      "os": platform.platform(), "python": sys.version.split()[0],
                      "libraries": {"hf_transformers": f"transformers {transformers.__version__}, "
                                                       f"torch {torch.__version__}"},
                      "gpus": [torch.cuda.get_device_name(0)] if cuda else [],
                      "model": {"name": model_name(args.model), "source": source,
                                "parameters": sum(p.numel() for p in model.parameters()),
                                "config": model.config.to_dict()},
                      "grid": grid, "task": "generate"},
           "results": []}
    # The source this script ran from, as every result names it: the record of the mytransformer
    # built from the same tree (its commit and the tree's difference, written beside the JSON).
    try:
        rec = json.loads(subprocess.run([args.mytransformer, "--source-info"], check=True,
                                        capture_output=True, text=True).stdout)
        if rec.get("dirty"):
            diff = args.output.rsplit(".json", 1)[0] + ".source.diff"
            subprocess.run([args.mytransformer, "--write-source-diff", diff], check=True)
            rec["diff_file"] = os.path.basename(diff)
        doc["system"]["source"] = rec
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        doc["system"]["source"] = {"commit": None, "origin": "unknown",
                                   "why": f"{args.mytransformer} --source-info: {e}"}
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    with torch.inference_mode():
        for b in grid["batch_sizes"]:
            for n_in in grid["input_lengths"]:
                n_out = grid["output_length"]
                for method in methods:
                    name = {"generate": "generate(): TTFT from a 1-token generate, decode = "
                                        "(total - TTFT) / (N - 1) (the seed's way; re-runs "
                                        "prefill)",
                            "manual": "manual KV-cache loop: prefill forward, then one forward "
                                      "per token from the cache, each step timed",
                            "static_graph": "StaticCache, prefill eager, each decode step "
                                            "replayed from a CUDA graph captured once per case, "
                                            "each step timed"}[method]
                    r = record(name, args, b, n_in, n_out)
                    print(f"[hf_transformers {method}] mb{b}in{n_in}out{n_out}", flush=True)
                    if b * n_in > grid.get("max_batch_input_product", 131072):
                        r.update(status="skipped", reason=f"batch x input length = {b * n_in} "
                                 f"exceeds max_batch_input_product")
                        doc["results"].append(r)
                        continue
                    gen = torch.Generator().manual_seed(args.seed)
                    prompt = torch.randint(vocab, (b, n_in), generator=gen).to(args.device)
                    try:
                        if cuda:
                            torch.cuda.empty_cache()
                            torch.cuda.reset_peak_memory_stats()
                        # (A conditional inside one lambda's body made run() return the
                        # generate lambda itself: the first H200 run recorded every generate()
                        # case failed, "'function' object is not subscriptable".)
                        if method == "manual":
                            def run():
                                return manual_run(torch, model, prompt, n_out, grid, cuda,
                                                  args.seed)
                        elif method == "static_graph":
                            decoder = StaticGraphDecoder(torch, transformers, model, b,
                                                         n_in + n_out, args.device)

                            def run():
                                return static_graph_run(torch, decoder, prompt, n_out, grid, cuda,
                                                        args.seed)
                        else:
                            def run():
                                return generate_run(torch, model, prompt, n_out, grid, cuda)
                        for _ in range(args.warmup):
                            run()
                        runs = [run() for _ in range(grid["num_runs"])]
                        r["metrics"], r["total_time_ms"] = metrics_of(b, n_in, n_out, runs)
                        r["metrics"]["weight_bytes"] = weight_bytes
                        if cuda:
                            r["metrics"]["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
                            r["metrics"]["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
                        r["metrics"]["host_peak_rss_bytes"] = \
                            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
                        r["extra"] = {"method": method, "ttft_ms_runs": [x[0] for x in runs],
                                      "decode_step_ms_runs": [x[1] for x in runs],
                                      "host_peak_rss_is": "the process's peak so far"}
                    except torch.cuda.OutOfMemoryError:
                        r.update(status="failed", reason="out of memory")
                        torch.cuda.empty_cache()
                    except Exception as e:  # one bad config never ends the grid
                        r.update(status="failed", reason=str(e).splitlines()[0] if str(e) else repr(e))
                    doc["results"].append(r)
                    with open(args.output + ".tmp", "w") as f:
                        json.dump(doc, f, indent=1)
                    os.replace(args.output + ".tmp", args.output)
    print(f"results: {args.output}")


if __name__ == "__main__":
    main()
