"""gpuplan-measure: measures the constants of gpuplan's step-time model on the GPUs at hand, with PyTorch.

* the GEMM efficiency of the shapes a model's layers run (--model, with --tp/--cp/--ep/--seq-len/--micro-batch;
  or --shapes), torch.matmul in bf16 (fp16, fp32);
* causal attention forward and backward by head dimension and sequence length;
* all-reduce, all-gather, reduce-scatter and all-to-all bus bandwidth through torch.distributed, at several sizes,
  written as nccl-tests prints it and fitted by gpuplan (`gpuplan comm --calibrate`);
* the CUDA context: the memory the process holds outside PyTorch's caching allocator.

It writes a file `gpuplan estimate --perf FILE` reads, a collective calibration that `--comm-calibration FILE`
reads, and prints the `--cuda-context` size. Without a GPU the same mechanics run on the CPU (gloo for the
collectives), so they can be tested anywhere. docs/measure.md describes the GPU path.
"""
import argparse
import sys

from ._measure_driver import UsageError, run

PROGRAM = "gpuplan-measure"
SKIPPABLE = ("gemm", "attention", "comm", "speed", "context")


def _size(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1] if t and t[-1] in units else ""
    number = t[:-1] if unit else t
    if not number.isdigit() or int(number) < 1:
        raise ValueError(text)
    return int(number) * units[unit]


def _list(kind, accepted):
    def parse(text):
        try:
            values = [kind(v) for v in text.split(",") if v.strip()]
        except ValueError:
            values = []
        if not values or (kind is int and min(values) < 1):
            raise argparse.ArgumentTypeError(f"'{text}' (accepted: {accepted})")
        return values
    return parse


def _names(allowed):
    def parse(text):
        values = [v.strip() for v in text.split(",") if v.strip()]
        unknown = [v for v in values if v not in allowed]
        if unknown or not values:
            raise argparse.ArgumentTypeError(f"'{text}' (accepted: a comma-separated list of {', '.join(allowed)})")
        return values
    return parse


def _positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:
            raise argparse.ArgumentTypeError(f"'{text}' (accepted: a positive number)")
        return value
    return parse


def _add_workload(p):
    g = p.add_argument_group("GEMM shapes")
    g.add_argument("--model", help="catalog name ('gpuplan catalog models') or Hugging Face config.json whose "
                                   "layers' GEMMs to measure")
    g.add_argument("--shapes", help="explicit shapes 'M,N,K;M,N,K,EXPERTS' instead of --model (rows, outputs, "
                                    "inputs of the forward GEMM; a fourth number: a grouped GEMM of that many experts)")
    for name, default, what in (("tp", 1, "tensor parallelism"), ("cp", 1, "context parallelism"),
                                ("ep", 1, "expert parallelism"), ("etp", 1, "expert tensor parallelism"),
                                ("seq-len", 4096, "sequence length (tokens)"),
                                ("micro-batch", 1, "micro batch (sequences)")):
        g.add_argument(f"--{name}", type=_positive(int), default=default, help=f"{what} (default {default})")


def _add_kernels(p):
    g = p.add_argument_group("device and timing")
    g.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                   help="where GEMMs and attention run (default: cuda when available)")
    g.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default="bf16", help="operand type (default bf16)")
    g.add_argument("--gpu", help="gpuplan catalog GPU the results are for (default: the one whose device name "
                                 "torch reports); its dense peak is the efficiencies' denominator")
    g.add_argument("--peak-tflops", type=_positive(float), help="dense peak of --dtype in TFLOP/s (default: the "
                                                               "catalog's); needed on the CPU")
    g.add_argument("--warmup", type=_positive(int), default=5, help="untimed runs first (default 5)")
    g.add_argument("--iters", type=_positive(int), default=20, help="runs per timed batch (default 20)")
    g.add_argument("--repeats", type=_positive(int), default=5, help="timed batches; the median counts (default 5)")
    a = p.add_argument_group("attention")
    a.add_argument("--attention-head-dims", type=_list(int, "head dimensions, e.g. 64,128"),
                   help="head dimensions (default: the model's, else 64,128)")
    a.add_argument("--attention-seq-lens", type=_list(int, "sequence lengths, e.g. 1024,4096"),
                   help="sequence lengths (default 512,1024,2048,4096,8192; on the CPU 128,256,512)")
    a.add_argument("--attention-heads", type=_positive(int), help="heads per call (default: the model's / tp, else 16)")
    a.add_argument("--attention-tokens", type=_positive(int),
                   help="tokens per call: batch = tokens / sequence length (default 16384; on the CPU 1024)")


def _add_comm(p):
    g = p.add_argument_group("collectives")
    g.add_argument("--collectives", type=_names(("all_reduce", "all_gather", "reduce_scatter", "all_to_all")),
                   default=["all_reduce", "all_gather", "reduce_scatter", "all_to_all"],
                   help="which (default all four)")
    g.add_argument("--comm-sizes", type=_list(_size, "sizes such as 1M,16M,256M,1G"),
                   help="buffer sizes, nccl-tests' convention (default 1M,4M,16M,64M,256M,1G; on the CPU "
                        "64K,256K,1M,4M)")
    g.add_argument("--ranks", type=_positive(int), help="processes to spawn when not under torchrun (default: "
                                                        "the visible GPUs; on the CPU 2)")
    g.add_argument("--backend", choices=("nccl", "gloo"), help="torch.distributed backend (default nccl on GPUs, "
                                                               "gloo on the CPU)")
    g.add_argument("--comm-warmup", type=_positive(int), default=5, help="untimed collectives per size (default 5)")
    g.add_argument("--comm-iters", type=_positive(int), default=20, help="timed collectives per size (default 20)")


def parser():
    p = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.split("\n\n")[0],
                                epilog="Writes --out (read by 'gpuplan estimate --perf FILE'), --comm-dir (nccl-tests "
                                       "outputs and comm-calibration.json, read by --comm-calibration FILE). Under "
                                       "torchrun every rank measures the collectives and rank 0 the rest. "
                                       "docs/measure.md has the details.")
    _add_workload(p)
    _add_kernels(p)
    _add_comm(p)
    o = p.add_argument_group("output")
    o.add_argument("--skip", type=_names(SKIPPABLE), default=[], help=f"parts not to measure: {', '.join(SKIPPABLE)}")
    o.add_argument("--out", default="gpuplan-perf.json", help="the --perf file to write (default gpuplan-perf.json)")
    o.add_argument("--comm-dir", help="where the collectives' nccl-tests outputs and comm-calibration.json go "
                                      "(default: --out without .json, plus -comm)")
    o.add_argument("--gemm-table", help="also write the per-shape GEMM table here, in data/gemm/'s format")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        return run(args)
    except UsageError as e:
        print(f"{PROGRAM}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
