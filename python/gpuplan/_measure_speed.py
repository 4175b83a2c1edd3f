"""How far apart the GPUs' sustained speeds are: every rank of the collectives' process group times the same GEMM
at the same time, so that every GPU draws its full power at once, as in training. Their spread is what
gpuplan's `gpu_speed_spread` describes (data/perf.json): a synchronous job waits for its slowest GPU.
"""
import statistics

from . import _measure_kernels as kernels

# A GEMM large enough to keep a GPU at its power limit (about 1.1 TFLOP per call) and, on the CPU, small enough
# for a test.
GPU_SIZE, CPU_SIZE = 8192, 128
# Untimed GEMMs before the timing on a GPU (about 3 s on an H100): long enough for its clocks to settle under load.
GPU_WARMUP, GPU_ITERS, GPU_REPEATS = 2000, 100, 10
CPU_WARMUP, CPU_ITERS, CPU_REPEATS = 1, 2, 3


def gemm_seconds_on_every_rank(torch, dist, device):
    """Seconds of one square GEMM on each rank (bf16 on a GPU, fp32 on the CPU), all ranks timing together;
    the list in rank order, and the GEMM's size and dtype."""
    cuda = device.type == "cuda"
    size = GPU_SIZE if cuda else CPU_SIZE
    dtype = torch.bfloat16 if cuda else torch.float32
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    timing = (GPU_WARMUP, GPU_ITERS, GPU_REPEATS) if cuda else (CPU_WARMUP, CPU_ITERS, CPU_REPEATS)
    dist.barrier()
    seconds = kernels.seconds_per_run(torch, device, lambda: torch.matmul(a, b), *timing)
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, seconds)
    return {"seconds_by_rank": everyone, "size": size, "dtype": str(dtype).replace("torch.", "")}


def speed_spread(seconds_by_rank):
    """The relative standard deviation of the ranks' times (sample standard deviation over the mean); None with
    fewer than two ranks."""
    if len(seconds_by_rank) < 2:
        return None
    return statistics.stdev(seconds_by_rank) / statistics.mean(seconds_by_rank)
