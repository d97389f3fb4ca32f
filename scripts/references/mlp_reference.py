#!/usr/bin/env python3
"""The lecture's MLP benchmark in Python PyTorch: the reference mymlp's C++ libtorch_eager is held
to (issue: "C++ libtorch_eager <= Python PyTorch eager on the same config").

The model, run_mlp and benchmark() are the lecture's: num_layers x (nn.Linear(dim, dim) -> GeLU),
each step a forward pass, the mean loss and a backward pass; benchmark() warms up, then times
trials by the host clock around run() + synchronize. Two changes, both to match mymlp's eager
implementations so that the times compare: the gradients are zeroed at the start of each call
(mymlp zeroes them so that every call can be checked; zero_() on existing tensors, as
libtorch_eager does), and besides the lecture's mean of the trials the median, minimum and every
trial are kept (mymlp ranks by medians). tf32: torch.backends.cuda.matmul.allow_tf32 on (off for
fp32, PyTorch's default); bf16: parameters and input in bf16.

  scripts/references/mlp_reference.py [--config mlp:d128l16b128s5 ...] [--dtype fp32,tf32,bf16]
                           [--device cuda|cpu] [--num_warmups N] [--num_trials N] [--graph]
                           [--json FILE] [--mymlp BIN]

--graph adds the lecture's CUDA-graph form (torch.cuda.graph over one call, replayed) as
`pytorch_python_graph`. The JSON holds records of the shared result schema (suite `mlp`,
backend `pytorch_python_eager`/`pytorch_python_graph`, the problem as mymlp writes it,
`total_time_ms`: host-clock statistics of whole calls, each ended by a synchronize, the
lecture's clock; mymlp's `total_time_ms` is the same clock), and `system` with the torch version and the device name.
With --mymlp (a mymlp built from this tree), `system.source` is that program's source record
(`mymlp --source-info`: the commit and the tree's difference from it), so that the file names
the source it ran as every other result does; and `--write-source-diff` writes the difference
beside the JSON. Correctness is not checked here (mymlp checks its own implementations against
float64).
Exit 2 with one line on bad input.
"""

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time

DESCRIPTOR = re.compile(r"^mlp:d(\d+)l(\d+)b(\d+)s(\d+)$")


def usage_error(message):
    print(f"mlp_reference.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def parse_config(text):
    m = DESCRIPTOR.match(text)
    if not m:
        usage_error(f"--config: expected mlp:d<dim>l<layers>b<batch>s<steps>, got '{text}'")
    dim, layers, batch, steps = (int(g) for g in m.groups())
    if min(dim, layers, batch, steps) < 1:
        usage_error(f"--config: every field must be at least 1 in '{text}'")
    return dim, layers, batch, steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", action="append", default=None)
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--num_warmups", type=int, default=3)
    ap.add_argument("--num_trials", type=int, default=20)
    ap.add_argument("--graph", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--mymlp", help="mymlp of this tree: its source record goes into the JSON")
    args = ap.parse_args()
    configs = [parse_config(c) for c in (args.config or ["mlp:d128l16b128s5"])]
    dtypes = args.dtype.split(",")
    for d in dtypes:
        if d not in ("fp32", "tf32", "bf16"):
            usage_error(f"--dtype: unknown dtype '{d}' (allowed: fp32, tf32, bf16)")
    if args.device not in ("cuda", "cpu"):
        usage_error(f"--device: expected cuda or cpu, got '{args.device}'")
    if args.num_warmups < 0 or args.num_trials < 1:
        usage_error("--num_warmups must be >= 0 and --num_trials >= 1")
    if args.graph and args.device != "cuda":
        usage_error("--graph needs --device cuda")
    source = None
    if args.mymlp:
        import subprocess
        try:
            source = json.loads(subprocess.run([args.mymlp, "--source-info"], check=True,
                                               capture_output=True, text=True).stdout)
        except (OSError, subprocess.CalledProcessError, ValueError) as e:
            usage_error(f"--mymlp: cannot read the source record of '{args.mymlp}': {e}")

    import torch
    from torch import nn

    if args.device == "cuda" and not torch.cuda.is_available():
        usage_error("--device cuda: torch finds no CUDA device")
    device = torch.device(args.device)

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize()

    class MLP(nn.Module):
        def __init__(self, dim, num_layers):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(num_layers)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
                x = torch.nn.functional.gelu(x)
            return x

    def run_mlp(dim, num_layers, batch_size, num_steps, dtype):
        model = MLP(dim, num_layers).to(device=device, dtype=dtype)
        x = torch.randn(batch_size, dim, device=device, dtype=dtype)

        def run():
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.zero_()
            for _ in range(num_steps):
                y = model(x).mean()
                y.backward()

        return run, model

    def benchmark(run, num_warmups, num_trials):
        for _ in range(num_warmups):
            run()
        synchronize()
        times = []
        for _ in range(num_trials):
            start = time.time()
            run()
            synchronize()
            times.append((time.time() - start) * 1000)
        return times

    def summary(times):
        return {"median": statistics.median(times), "mean": statistics.fmean(times),
                "min": min(times), "max": max(times), "n": len(times)}

    results = []
    print(f"{'problem':<28} {'backend':<22} {'median ms':>10} {'mean ms':>10} {'min ms':>10}")
    for dim, layers, batch, steps in configs:
        for dt in dtypes:
            torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"
            torch_dtype = torch.bfloat16 if dt == "bf16" else torch.float32
            problem = f"mlp:d{dim}l{layers}b{batch}s{steps}:{dt}"  # as mymlp writes it
            forms = [("pytorch_python_eager", False)] + (
                [("pytorch_python_graph", True)] if args.graph else [])
            for backend, graph in forms:
                torch.manual_seed(0)
                run, model = run_mlp(dim, layers, batch, steps, torch_dtype)
                call = run
                if graph:
                    stream = torch.cuda.Stream()
                    stream.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(stream):
                        for _ in range(3):
                            run()
                    torch.cuda.current_stream().wait_stream(stream)
                    for p in model.parameters():
                        p.grad = None
                    # The whole call captured (steps included), gradients accumulated in place.
                    g = torch.cuda.CUDAGraph()
                    x = torch.randn(batch, dim, device=device, dtype=torch_dtype)
                    with torch.cuda.graph(g):
                        for _ in range(steps):
                            y = model(x).mean()
                            y.backward()
                    call = g.replay
                times = benchmark(call, args.num_warmups, args.num_trials)
                s = summary(times)
                print(f"{problem:<28} {backend:<22} {s['median']:>10.4g} {s['mean']:>10.4g} "
                      f"{s['min']:>10.4g}")
                rec = {
                    "suite": "mlp", "backend": backend, "device": device.type,
                    "problem": problem, "name": "", "dtype": dt, "status": "passed",
                    "reason": "", "algorithm": "Python PyTorch " + torch.__version__ + (
                        ", torch.cuda.graph replay" if graph else ", eager autograd"),
                    "total_time_ms": s, "timing_mode": "real",
                    "flop": 6.0 * batch * dim * dim * layers * steps,
                    "params": {"kind": "mlp", "dim": dim, "num_layers": layers,
                               "batch_size": batch, "num_steps": steps, "dtype": dt},
                    "extra": {"clock": "host clock around run() + synchronize (the lecture's "
                                       "benchmark())", "trials_ms": times,
                              "num_warmups": args.num_warmups, "gelu": "erf",
                              "correctness": "not checked (mymlp checks its implementations)"},
                    "command": " ".join(["scripts/references/mlp_reference.py"] + sys.argv[1:]),
                }
                results.append(rec)
    if args.json:
        system = {"host": platform.node(), "python": platform.python_version(),
                  "torch": torch.__version__,
                  "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu"}
        if source is not None:
            system["source"] = source
            if source.get("dirty"):
                diff = args.json.rsplit(".json", 1)[0] + ".source.diff"
                import subprocess
                subprocess.run([args.mymlp, "--write-source-diff", diff], check=True)
                system["source"]["diff_file"] = os.path.basename(diff)
        with open(args.json, "w") as f:
            json.dump({"schema_version": 2, "system": system, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
