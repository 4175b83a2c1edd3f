"""Bus bandwidth of all-reduce, all-gather, reduce-scatter and all-to-all through torch.distributed, measured as
nccl-tests measures it and written as nccl-tests prints it, so that `gpuplan comm --calibrate` fits it.

Conventions of nccl-tests (doc/PERFORMANCE.md): `size` is the all-reduce buffer, the all-gather output, the
reduce-scatter input and the all-to-all send buffer of one rank; algbw = size / time; busbw = algbw x factor with
factor 2(n-1)/n for all-reduce and (n-1)/n for all-gather, reduce-scatter and all-to-all; the time is the mean
over ranks (its default `-a 1`).
"""
import os
import socket
import time

from . import _measure_speed as speed

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
NCCL_TESTS_NAME = {"all_reduce": "all_reduce_perf", "all_gather": "all_gather_perf",
                   "reduce_scatter": "reduce_scatter_perf", "all_to_all": "alltoall_perf"}
ELEMENT_BYTES = 4   # float32, nccl-tests' default type


def busbw_factor(collective, ranks):
    """nccl-tests' bus-bandwidth factor for `ranks` ranks."""
    if collective == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if collective in ("all_gather", "reduce_scatter", "all_to_all"):
        return (ranks - 1) / ranks
    raise ValueError(f"unknown collective {collective!r} (accepted: {', '.join(COLLECTIVES)})")


def _operation(torch, dist, collective, count, ranks, rank, device):
    """The call that runs `collective` on a buffer of `count` float32 elements (nccl-tests' size convention), and
    whether it is emulated (gloo has no reduce-scatter: all-reduce, then this rank's chunk)."""
    gloo = dist.get_backend() == "gloo"
    full = torch.ones(count, dtype=torch.float32, device=device)
    part = torch.ones(count // ranks, dtype=torch.float32, device=device)
    if collective == "all_reduce":
        return (lambda: dist.all_reduce(full)), False
    if collective == "all_to_all":
        out = torch.empty_like(full)
        return (lambda: dist.all_to_all_single(out, full)), False
    if collective == "all_gather":
        gather = getattr(dist, "all_gather_into_tensor", None) or getattr(dist, "_all_gather_base", None)
        if gloo or gather is None:
            pieces = list(full.chunk(ranks))
            return (lambda: dist.all_gather(pieces, part)), False
        return (lambda: gather(full, part)), False
    scatter = getattr(dist, "reduce_scatter_tensor", None) or getattr(dist, "_reduce_scatter_base", None)
    if gloo or scatter is None:
        def emulated():
            dist.all_reduce(full)
            part.copy_(full.chunk(ranks)[rank])
        return emulated, True
    return (lambda: scatter(part, full)), False


def _mean_over_ranks(torch, dist, seconds, device):
    value = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(value)
    return value.item() / dist.get_world_size()


def _time_collective(torch, dist, run, device, warmup, iters):
    for _ in range(warmup):
        run()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    dist.barrier()
    begin = time.perf_counter()
    for _ in range(iters):
        run()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return _mean_over_ranks(torch, dist, (time.perf_counter() - begin) / iters, device)


def measure_collectives(torch, dist, device, sizes, collectives, warmup, iters):
    """One row per collective and size (bytes, rounded down to whole float32 chunks per rank)."""
    ranks, rank = dist.get_world_size(), dist.get_rank()
    rows = []
    for collective in collectives:
        for size in sizes:
            count = max(ranks, size // ELEMENT_BYTES // ranks * ranks)
            run, emulated = _operation(torch, dist, collective, count, ranks, rank, device)
            seconds = _time_collective(torch, dist, run, device, warmup, iters)
            size_bytes = count * ELEMENT_BYTES
            algbw = size_bytes / seconds / 1e9
            rows.append({"collective": collective, "size_bytes": size_bytes, "count": count,
                         "time_us": seconds * 1e6, "algbw_GBps": algbw,
                         "busbw_GBps": algbw * busbw_factor(collective, ranks), "emulated": emulated})
    return rows


def rank_lines(dist, device, device_name):
    """Every rank's '#  Rank' line as nccl-tests prints them (host and device): they tell gpuplan the hosts."""
    mine = (socket.gethostname(), os.getpid(), device.index if device.index is not None else 0, device_name)
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    return [f"#  Rank {r:2d} Group  0 Pid {pid:6d} on {host} device {index:2d} [0x00] {name}"
            for r, (host, pid, index, name) in enumerate(everyone)]


def nccl_tests_text(collective, rows, ranks, rank_info, source):
    """The rows of one collective as nccl-tests prints them (out-of-place columns only)."""
    lines = [f"# Collective test starting: {NCCL_TESTS_NAME[collective]}",
             f"# {source}",
             f"# nThread 1 nGpus 1 ranks {ranks} iters per size: see gpuplan-measure --comm-iters"]
    if any(r["emulated"] for r in rows):
        lines.append("# emulated: the gloo backend has no reduce-scatter; timed as all-reduce plus a copy of the chunk")
    lines += ["#", "# Using devices", *rank_info, "#",
              "#       size         count      type   redop    root     time   algbw   busbw #wrong",
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"]
    op = "sum" if collective in ("all_reduce", "reduce_scatter") else "none"
    for r in rows:
        lines.append(f"{r['size_bytes']:12d} {r['count']:13d} {'float':>9} {op:>7} {-1:7d} {r['time_us']:10.2f} "
                     f"{r['algbw_GBps']:9.4f} {r['busbw_GBps']:9.4f} {'N/A':>6}")
    mean = sum(r["busbw_GBps"] for r in rows) / len(rows)
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {mean:.4f}", "#", ""]
    return "\n".join(lines)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _device_for(torch, backend, local_rank):
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank), torch.cuda.get_device_name(local_rank)
    return torch.device("cpu"), "cpu"


def run_ranks(config, rank=None, world=None):
    """Measures on this rank of a process group (torchrun's environment, or the rank and world given by spawn):
    the collectives, then one GEMM on every rank at once (_measure_speed.py). Returns rank 0's result (rows, the
    rank lines, the backend, the GEMM's time on each rank), None on the other ranks."""
    import torch
    import torch.distributed as dist
    if rank is not None:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(config["port"]))
        dist.init_process_group(config["backend"], rank=rank, world_size=world)
    else:
        dist.init_process_group(config["backend"])
    try:
        local_rank = int(os.environ.get("LOCAL_RANK", dist.get_rank()))
        device, name = _device_for(torch, config["backend"], local_rank)
        info = rank_lines(dist, device, name)
        rows = measure_collectives(torch, dist, device, config["sizes"], config["collectives"], config["warmup"],
                                   config["iters"])
        result = {"rows": rows, "rank_lines": info, "backend": config["backend"], "ranks": dist.get_world_size()}
        if config["speed"]:
            result["gemm_speed"] = speed.gemm_seconds_on_every_rank(torch, dist, device)
        return result if dist.get_rank() == 0 else None
    finally:
        dist.destroy_process_group()


def spawned_rank(rank, world, config, result_path):
    """torch.multiprocessing.spawn's entry: rank 0 leaves its result in `result_path` (JSON)."""
    import json
    result = run_ranks(config, rank, world)
    if result is not None:
        with open(result_path, "w") as f:
            json.dump(result, f)


def spawn_ranks(config, ranks):
    """Runs `ranks` local processes (torch.multiprocessing.spawn) and returns rank 0's result."""
    import json
    import tempfile
    import torch.multiprocessing as mp
    config = dict(config, port=free_port())
    with tempfile.TemporaryDirectory(prefix="gpuplan-measure-") as folder:
        path = os.path.join(folder, "rank0.json")
        mp.spawn(spawned_rank, args=(ranks, config, path), nprocs=ranks, join=True)
        with open(path) as f:
            return json.load(f)
