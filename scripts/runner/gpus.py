"""The GPUs of this host as nvidia-smi lists them (index, UUID, name), the devices --gpus picks
from them, and the host cores each worker of a --gpus run is pinned to.

nvidia-smi is the program named by $MYCONV_NVIDIA_SMI (default: nvidia-smi on PATH): the tests
name a script that prints a fake GPU list, so that the split is tested on a host without GPU.
Where CUDA_VISIBLE_DEVICES is set (a Slurm task with --gpus-per-task, say), only the GPUs it
names are this run's, in its order."""

import os
import shutil
import subprocess

from runner.common import UsageError

QUERY = ["--query-gpu=index,uuid,name", "--format=csv,noheader"]


def nvidia_smi():
    return os.environ.get("MYCONV_NVIDIA_SMI") or shutil.which("nvidia-smi")


def host_gpus():
    """[{index, uuid, name}] from nvidia-smi; (None, why) when it cannot tell."""
    smi = nvidia_smi()
    if not smi:
        return None, "no nvidia-smi on PATH"
    try:
        p = subprocess.run([smi] + QUERY, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{smi}: {e}"
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or p.stdout.strip().splitlines() or [""])[-1]
        return None, f"nvidia-smi exited with {p.returncode}: {last}"
    gpus = []
    for line in p.stdout.splitlines():
        parts = [x.strip() for x in line.split(",", 2)]
        if len(parts) == 3 and parts[0].isdigit():
            gpus.append({"index": int(parts[0]), "uuid": parts[1], "name": parts[2]})
    return gpus, None if gpus else "nvidia-smi lists no GPU"


def visible(gpus):
    """The GPUs CUDA_VISIBLE_DEVICES leaves to this process (all when unset)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return gpus
    out = []
    for item in (x.strip() for x in env.split(",")):
        match = [g for g in gpus if str(g["index"]) == item or g["uuid"] == item or
                 (item.startswith("GPU-") and g["uuid"].startswith(item))]
        if not match:
            break  # CUDA stops at the first entry it cannot resolve
        out.append(match[0])
    return out


def the_single_gpu():
    """The GPU a plain run's CUDA device 0 is, when that is certain: exactly one visible GPU."""
    gpus, _ = host_gpus()
    gpus = visible(gpus or [])
    return gpus[0] if len(gpus) == 1 else None


def select(spec):
    """The GPUs of --gpus all|N|LIST (LIST: indices or UUIDs, comma-separated)."""
    gpus, why = host_gpus()
    if not gpus:
        raise UsageError(f"--gpus {spec}: no GPU found ({why}); run without --gpus for the CPU "
                         "backends")
    gpus = visible(gpus)
    if not gpus:
        raise UsageError(f"--gpus {spec}: CUDA_VISIBLE_DEVICES="
                         f"'{os.environ.get('CUDA_VISIBLE_DEVICES')}' leaves no GPU")
    if spec == "all":
        return gpus
    if spec.isdigit():
        n = int(spec)
        if not 1 <= n <= len(gpus):
            raise UsageError(f"--gpus {spec}: this host has {len(gpus)} GPU(s)")
        return gpus[:n]
    chosen = []
    for item in spec.split(","):
        match = [g for g in gpus if str(g["index"]) == item or g["uuid"] == item]
        if not item or not match:
            raise UsageError(f"--gpus: no GPU '{item}' (this host's: "
                             f"{', '.join(str(g['index']) for g in gpus)})")
        if match[0] in chosen:
            raise UsageError(f"--gpus: GPU '{item}' named twice")
        chosen.append(match[0])
    return chosen


def core_split(cores, gpu_workers, per_gpu=None):
    """(cores of each GPU worker, cores of the CPU worker): the GPU workers' host threads get
    their own cores (per_gpu each, default a 1/(2G) share of the host, at least one), the CPU
    backends the rest, so that no GPU worker's thread competes with a timed CPU case. An empty
    CPU set means none is left: the CPU worker then runs after the GPU workers, on every core."""
    cores = sorted(cores)
    if not gpu_workers:
        return [], cores
    if per_gpu is None:
        per_gpu = max(1, len(cores) // (2 * gpu_workers))
    gpu_sets = []
    for k in range(gpu_workers):
        chunk = cores[k * per_gpu:(k + 1) * per_gpu]
        gpu_sets.append(chunk or [cores[k % len(cores)]])
    return gpu_sets, cores[gpu_workers * per_gpu:]
