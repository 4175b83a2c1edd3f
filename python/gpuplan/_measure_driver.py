"""gpuplan-measure's run: resolves the inputs, measures, writes (measure.py has the command line)."""
import datetime
import json
import os
import socket
import sys

from . import _measure_comm as comm
from . import _measure_kernels as kernels
from . import _measure_shapes as shapes_mod
from ._measure_output import perf_overlay


class UsageError(Exception):
    """Bad input or a missing requirement: one line, exit status 2."""


def import_torch():
    try:
        import torch
    except ImportError as e:
        raise UsageError(f"PyTorch is needed and cannot be imported by {sys.executable} ({e}); install it for this "
                         "interpreter (pip install torch; Debian: apt install python3-torch)") from None
    return torch


def _today():
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def _under_torchrun():
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ


def _device(torch, args):
    if args.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device: 'cuda' (no CUDA device is visible to PyTorch; accepted: auto, cpu)")
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if not use_cuda:
        return torch.device("cpu"), "cpu"
    index = int(os.environ.get("LOCAL_RANK", "0")) if _under_torchrun() else torch.cuda.current_device()
    torch.cuda.set_device(index)
    return torch.device("cuda", index), torch.cuda.get_device_name(index)


def _workload(args):
    """The GEMM shapes to measure and words saying where they come from; the model's architecture, if any."""
    import gpuplan
    if args.shapes:
        try:
            return shapes_mod.parse_shapes(args.shapes), "--shapes", None
        except ValueError as e:
            raise UsageError(str(e)) from None
    if not args.model:
        if "gemm" in args.skip:
            return [], "", None
        raise UsageError("--model: missing (accepted: a catalog model or a config.json; or --shapes M,N,K;..., or "
                         "--skip gemm)")
    try:
        info = gpuplan.model(model=args.model)
    except gpuplan.InputError as e:
        raise UsageError(f"--model: {e}") from None
    arch, params = info["architecture"], info["params"]
    try:
        shapes = shapes_mod.gemm_shapes(arch, tp=args.tp, seq_len=args.seq_len, micro_batch=args.micro_batch,
                                        cp=args.cp, ep=args.ep, etp=args.etp, dense_layers=params["dense_layers"],
                                        moe_layers=params["moe_layers"])
    except ValueError as e:
        raise UsageError(f"--tp/--cp/--ep/--etp: {e} (accepted: divisors of the model's dimensions)") from None
    words = (f"{info['name']}, tp {args.tp}, cp {args.cp}, ep {args.ep}, etp {args.etp}, seq-len {args.seq_len}, "
             f"micro-batch {args.micro_batch}")
    return shapes, words, arch


def _catalog_gpu(device_name, requested):
    """The catalog entry named --gpu, or the one whose device_names hold torch's device name; None when neither."""
    import gpuplan
    gpus = gpuplan.catalog("gpus")["gpus"]
    if requested:
        for g in gpus:
            if g["name"] == requested:
                return g
        raise UsageError(f"--gpu: '{requested}' (unknown; accepted: a name from 'gpuplan catalog gpus')")
    key = device_name.strip().lower()
    return next((g for g in gpus if key in (d.lower() for d in g.get("device_names", []))), None)


def _peak(args, gpu, device_name):
    if args.peak_tflops:
        return args.peak_tflops, "--peak-tflops"
    if gpu and gpu["dense_tflops"].get(args.dtype):
        return gpu["dense_tflops"][args.dtype], f"gpuplan catalog {gpu['name']}, dense {args.dtype}"
    raise UsageError(f"--peak-tflops: missing ('{device_name}' is not a GPU of gpuplan's catalog with a dense "
                     f"{args.dtype} peak; accepted: --peak-tflops TFLOPS, or --gpu NAME)")


def _comm_config(torch, args, device):
    cuda = device.type == "cuda"
    backend = args.backend or ("nccl" if cuda else "gloo")
    # nccl-tests' bandwidth-bound range on GPUs (1 MiB to 1 GiB); on the CPU small enough for seconds.
    defaults = [(1 << 20) * 4 ** i for i in range(6)] if cuda else [(64 << 10) * 4 ** i for i in range(4)]
    sizes = args.comm_sizes or defaults
    return {"backend": backend, "sizes": sizes, "collectives": args.collectives, "warmup": args.comm_warmup,
            "iters": args.comm_iters, "speed": "speed" not in args.skip}


def _measure_comm(torch, args, device):
    """Rank 0's collective rows, or None when skipped or with one rank; under torchrun every rank runs this."""
    if "comm" in args.skip:
        return None
    config = _comm_config(torch, args, device)
    if _under_torchrun():
        return comm.run_ranks(config)
    ranks = args.ranks or (torch.cuda.device_count() if device.type == "cuda" else 2)
    if ranks < 2:
        print(f"collectives: skipped, {ranks} rank (give --ranks N or run under torchrun)")
        return None
    return comm.spawn_ranks(config, ranks)


def _process_bytes_nvml(pid):
    """Device memory NVML counts for this process (all devices), or None without pynvml."""
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:   # no pynvml, or no driver it can talk to
        return None
    try:
        used = 0
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                if p.pid == pid and p.usedGpuMemory:
                    used += p.usedGpuMemory
        return used or None
    finally:
        pynvml.nvmlShutdown()


def _cuda_context(torch, device, when):
    """Memory this process holds on the GPU minus what PyTorch's caching allocator reserved: the CUDA context,
    the kernel images loaded so far and library handles."""
    torch.cuda.synchronize(device)
    free, total = torch.cuda.mem_get_info(device)
    reserved = torch.cuda.memory_reserved(device)
    used = _process_bytes_nvml(os.getpid())
    how = "NVML: this process's device memory"
    if used is None:
        used = total - free
        how = "torch.cuda.mem_get_info: total - free (every process on the device; pynvml is not installed)"
    return {"when": when, "bytes": used - reserved, "process_bytes": used, "reserved_bytes": reserved, "how": how}


def _measure_gemm(torch, device, dtype, shapes, timing):
    rows = []
    for s in shapes:
        seconds = kernels.time_linear(torch, device, dtype, s, timing)
        rows.append({"name": s.name, "rows": s.rows, "outputs": s.outputs, "inputs": s.inputs, "batch": s.batch,
                     "count": s.count, "flops": s.flops(), "seconds": seconds})
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return rows


def _attention_plan(args, arch, device):
    cuda = device.type == "cuda"
    dims = args.attention_head_dims or ([arch["head_dim"]] if arch else [64, 128])
    lengths = args.attention_seq_lens or ([512, 1024, 2048, 4096, 8192] if cuda else [128, 256, 512])
    heads = args.attention_heads or (max(1, arch["heads"] // args.tp) if arch else 16)
    tokens = args.attention_tokens or (16384 if cuda else 1024)
    return dims, lengths, heads, tokens


def _measure_attention(torch, args, arch, device, dtype, timing):
    dims, lengths, heads, tokens = _attention_plan(args, arch, device)
    _, kernel = kernels.attention_kernel(torch)
    rows = []
    for head_dim in dims:
        for seq_len in lengths:
            batch = max(1, tokens // seq_len)
            fwd, bwd = kernels.time_attention(torch, device, dtype, batch, heads, seq_len, head_dim, timing)
            rows.append({"batch": batch, "heads": heads, "seq_len": seq_len, "head_dim": head_dim, "forward_s": fwd,
                         "backward_s": bwd,
                         "forward_flops": kernels.attention_flops(batch, heads, seq_len, head_dim)})
            if device.type == "cuda":
                torch.cuda.empty_cache()
    return {"kernel": kernel, "rows": rows}


def _comm_dir(args):
    if args.comm_dir:
        return args.comm_dir
    stem = args.out[:-5] if args.out.endswith(".json") else args.out
    return stem + "-comm"


def _write_comm(result, folder, source):
    """The nccl-tests outputs, one per collective, and gpuplan's fit of them (comm-calibration.json)."""
    import gpuplan
    os.makedirs(folder, exist_ok=True)
    files = []
    for collective in comm.COLLECTIVES:
        rows = [r for r in result["rows"] if r["collective"] == collective]
        if not rows:
            continue
        path = os.path.join(folder, comm.NCCL_TESTS_NAME[collective] + ".txt")
        with open(path, "w") as f:
            f.write(comm.nccl_tests_text(collective, rows, result["ranks"], result["rank_lines"], source))
        files.append(path)
    calibration = os.path.join(folder, "comm-calibration.json")
    try:
        gpuplan.calibrate(calibrate=files, out=calibration)
    except gpuplan.InputError as e:
        print(f"collectives: no calibration fitted ({e}); the nccl-tests outputs are in {folder}")
        calibration = None
    return files, calibration


def _summary(document, measured, files, calibration, context, out):
    section = next(iter(document.get("gpus", {}).values()), document.get("defaults", {}))
    for key, entry in section.items():
        print(f"{key}: {entry['value']}")
    for row in (measured.get("collectives") or {}).get("rows", []):
        if row["size_bytes"] == max(r["size_bytes"] for r in measured["collectives"]["rows"]):
            print(f"{row['collective']}: busbw {row['busbw_GBps']:.2f} GB/s at {row['size_bytes']} bytes")
    print(f"wrote {out}" + (f", {len(files)} nccl-tests outputs" if files else ""))
    options = f"--perf {out}"
    if calibration:
        options += f" --comm-calibration {calibration}"
    if context:
        options += f" --cuda-context {max(context['bytes'], 0) // 10**6}MB"
    print(f"use: gpuplan estimate ... {options}")


def _measure_compute(torch, args, device, device_name, workload):
    shapes, words, arch = workload
    dtype = getattr(torch, kernels.DTYPES[args.dtype])
    timing = (args.warmup, args.iters, args.repeats)
    measured = {}
    contexts = []
    if device.type == "cuda" and "context" not in args.skip:
        torch.ones(1, device=device)
        contexts.append(_cuda_context(torch, device, "after the first tensor"))
    if "gemm" not in args.skip and shapes:
        measured["gemm"] = _measure_gemm(torch, device, dtype, shapes, timing)
        measured["workload"] = words
    if "attention" not in args.skip:
        measured["attention"] = _measure_attention(torch, args, arch, device, dtype, timing)
    if contexts:
        contexts.append(_cuda_context(torch, device, "after the GEMMs and attention (kernels loaded)"))
        measured["cuda_context"] = contexts
    return measured


def run(args):
    workload = _workload(args)   # first: bad input is told before PyTorch takes seconds to import
    torch = import_torch()
    device, device_name = _device(torch, args)
    gpu = _catalog_gpu(device_name, args.gpu)
    peak, peak_source = _peak(args, gpu, device_name)
    version = torch.__version__
    source = f"measured by gpuplan-measure on {device_name}, torch {version}, {_today()}"
    collectives = _measure_comm(torch, args, device)
    if _under_torchrun() and int(os.environ["RANK"]) != 0:
        return 0
    measured = {"source": source, "device": device_name, "device_type": device.type, "torch": version,
                "date": _today(), "host": socket.gethostname(), "gpu": gpu["name"] if gpu else None,
                "dtype": args.dtype, "peak_tflops": peak, "peak_source": peak_source}
    measured.update(_measure_compute(torch, args, device, device_name, workload))
    files, calibration = [], None
    if collectives:
        files, calibration = _write_comm(collectives, _comm_dir(args), source)
        measured["collectives"] = dict(collectives, files=files, calibration=calibration)
    document, warnings = perf_overlay(measured)
    for w in warnings:
        print(f"warning: {w}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(document, f, indent=1)
        f.write("\n")
    if args.gemm_table and "_gemm_table" in document:
        with open(args.gemm_table, "w") as f:
            json.dump(document["_gemm_table"], f, indent=1)
            f.write("\n")
    context = measured.get("cuda_context", [None])[-1]
    _summary(document, measured, files, calibration, context, args.out)
    return 0
