"""What gpuplan-measure writes: the `gpuplan estimate --perf FILE` overlay (data/perf.json's schema) built from
raw timings, and the per-shape GEMM table in data/gemm/'s format.

Efficiencies are recomputed from the stored times and FLOPs for a given peak, so the same measurements can be
written against another peak (perf_overlay(measurements, peak_tflops=...)). Needs no PyTorch.
"""
import copy

from ._measure_speed import speed_spread

# The ranges src/perf/perf_constants.cpp accepts.
EFFICIENCY_RANGE = (0.01, 1.0)
HALF_LENGTH_RANGE = (0.0, 1e7)
MAX_SPREAD = 0.5
ATTENTION_BACKWARD_FLOPS = 2.5   # flash attention's backward: 5 matmuls against the forward's 2 (FlashAttention-2)


def _clamp(value, bounds, name, warnings):
    low, high = bounds
    if value < low or value > high:
        warnings.append(f"{name} {value:.4g} is outside {low}..{high} (the range gpuplan accepts): written as the "
                        "nearest bound; check the peak (--peak-tflops or --gpu)")
    return min(max(value, low), high)


def gemm_efficiencies(entry, peak_flops):
    """Forward, input-gradient and weight-gradient efficiency of one measured linear layer."""
    return {name: entry["flops"] / (seconds * peak_flops) for name, seconds in entry["seconds"].items()}


def time_weighted_gemm_efficiency(gemm, peak_flops):
    """The one efficiency that reproduces the measured time of all GEMMs of a step: every shape's three GEMMs,
    weighted by how often a step runs them."""
    flops = sum(e["count"] * e["flops"] * len(e["seconds"]) for e in gemm)
    seconds = sum(e["count"] * sum(e["seconds"].values()) for e in gemm)
    return flops / (seconds * peak_flops)


def attention_efficiency(row, peak_flops):
    """Forward + backward efficiency of one attention measurement, as gpuplan blends them (backward 2.5x FLOPs)."""
    flops = row["forward_flops"] * (1 + ATTENTION_BACKWARD_FLOPS)
    return flops / ((row["forward_s"] + row["backward_s"]) * peak_flops)


def fit_attention(rows, peak_flops):
    """gpuplan's attention model eff(L) = E x L / (L + L0), L the keys per call, fitted as the straight line
    1/eff = 1/E + (L0/E) / L (least squares). Returns (E, L0); L0 is 0 when the rows cannot tell (one sequence
    length, or an efficiency that does not grow with it) and E is then their time-weighted efficiency."""
    points = [(1.0 / r["seq_len"], 1.0 / attention_efficiency(r, peak_flops)) for r in rows]
    xs = {x for x, _ in points}
    if len(xs) >= 2:
        n = len(points)
        mean_x, mean_y = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
        sxx = sum((x - mean_x) ** 2 for x, _ in points)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx
        intercept = mean_y - slope * mean_x
        if slope > 0 and intercept > 0:
            return 1.0 / intercept, slope / intercept
    flops = sum(r["forward_flops"] * (1 + ATTENTION_BACKWARD_FLOPS) for r in rows)
    seconds = sum(r["forward_s"] + r["backward_s"] for r in rows)
    return flops / (seconds * peak_flops), 0.0


def gemm_table(measurements, peak_flops):
    """The measured shapes in data/gemm/'s format: [rows, outputs, inputs, forward, dgrad, wgrad] per shape,
    grouped GEMMs per expert."""
    table = {"_about": "GEMM efficiency (fraction of the dense peak) by linear-layer shape, as data/gemm/*.json: "
                       "[rows, outputs, inputs, forward, input gradient, weight gradient]; grouped entries are "
                       "per expert of a batched GEMM. Written by gpuplan-measure.",
             "gpu": measurements.get("gpu") or measurements["device"],
             "source": measurements["source"], "dense": [], "grouped": []}
    for entry in measurements["gemm"]:
        e = gemm_efficiencies(entry, peak_flops)
        row = [entry["rows"], entry["outputs"], entry["inputs"]] + [round(e[k], 4) for k in ("forward", "dgrad", "wgrad")]
        table["grouped" if entry["batch"] > 1 else "dense"].append(row)
    return table


def _gemm_constants(measurements, peak_flops, source, warnings):
    value = time_weighted_gemm_efficiency(measurements["gemm"], peak_flops)
    shapes = len(measurements["gemm"])
    return {
        "gemm_max_efficiency": {
            "value": round(_clamp(value, EFFICIENCY_RANGE, "gemm_max_efficiency", warnings), 4),
            "source": f"{source}: the time-weighted efficiency of the forward, input-gradient and weight-gradient "
                      f"GEMMs of {shapes} shape(s) ({measurements['workload']}), {measurements['dtype']}, "
                      f"torch.matmul, against a peak of {peak_flops / 1e12:.6g} TFLOP/s"},
        "measured_gemm_efficiency": {
            "value": 0,
            "source": f"{source}: this GPU's own measurement replaces the table data/gemm/ may hold for it; the "
                      "per-shape measurements are in _gemm_table"}}


def _attention_constants(measurements, peak_flops, source, warnings):
    attention = measurements["attention"]
    efficiency, half_length = fit_attention(attention["rows"], peak_flops)
    lengths = sorted({r["seq_len"] for r in attention["rows"]})
    dims = sorted({r["head_dim"] for r in attention["rows"]})
    how = f"{source}: {attention['kernel']}, head dim {dims}, sequence lengths {lengths}, {measurements['dtype']}"
    return {
        "flash_attention_efficiency": {
            "value": round(_clamp(efficiency, EFFICIENCY_RANGE, "flash_attention_efficiency", warnings), 4),
            "source": f"{how}: E of eff = E x L / (L + L0) fitted to forward + backward (2.5x forward FLOPs) "
                      f"against a peak of {peak_flops / 1e12:.6g} TFLOP/s"},
        "flash_attention_half_length": {
            "value": round(_clamp(half_length, HALF_LENGTH_RANGE, "flash_attention_half_length", warnings), 1),
            "source": f"{how}: L0 of the same fit (0: the lengths measured do not show it)"},
        # The kernel timed is the one PyTorch modules call, so their jobs take it in place of the catalog's figure
        # for PyTorch's attention on this GPU; Transformer Engine's jobs take it too, for want of their own.
        "sdpa_attention_efficiency": {
            "value": round(_clamp(efficiency, EFFICIENCY_RANGE, "sdpa_attention_efficiency", warnings), 4),
            "source": f"{how}: E of the same fit, for jobs whose attention is PyTorch's scaled_dot_product_attention"}}


def _speed_constants(measurements, source, warnings):
    """gpu_speed_spread from one GEMM timed on every GPU at once; only from GPUs (CPU processes tell nothing of
    them) and from at least two."""
    gemm = (measurements.get("collectives") or {}).get("gemm_speed")
    if not gemm or measurements["device_type"] != "cuda":
        return {}
    seconds = gemm["seconds_by_rank"]
    spread = speed_spread(seconds)
    if spread is None:
        return {}
    if spread > MAX_SPREAD:
        warnings.append(f"gpu_speed_spread {spread:.3g} is above {MAX_SPREAD}, the most gpuplan accepts: written as "
                        f"{MAX_SPREAD}; one GPU ran far slower than the others (_measurements.collectives.gemm_speed)")
    return {"gpu_speed_spread": {
        "value": round(min(spread, MAX_SPREAD), 4),
        "source": f"{source}: the relative standard deviation of the times of one {gemm['size']}^3 {gemm['dtype']} "
                  f"GEMM on each of {len(seconds)} GPUs, all timed at once (fastest {min(seconds) * 1e3:.4g} ms, "
                  f"slowest {max(seconds) * 1e3:.4g} ms); a few GPUs estimate the spread of a whole cluster "
                  "roughly, and outliers among them count in full"}}


def perf_overlay(measurements, peak_tflops=None):
    """The --perf overlay: the constants measured, under gpus.<catalog name> (or defaults when the GPU is not in
    gpuplan's catalog), with the raw measurements under _measurements and the table under _gemm_table.
    Returns (document, warnings)."""
    peak_tflops = peak_tflops or measurements["peak_tflops"]
    peak_flops = peak_tflops * 1e12
    source = measurements["source"]
    warnings = []
    constants = {}
    if measurements.get("gemm"):
        constants.update(_gemm_constants(measurements, peak_flops, source, warnings))
    if measurements.get("attention", {}).get("rows"):
        constants.update(_attention_constants(measurements, peak_flops, source, warnings))
    constants.update(_speed_constants(measurements, source, warnings))
    gpu = measurements.get("gpu")
    document = {"_about": "Compute-model constants measured by gpuplan-measure (docs/measure.md); read with "
                          "`gpuplan estimate --perf FILE` (data/perf.json's schema). Keys starting with '_' are "
                          "not read by gpuplan: the raw measurements, and the per-shape GEMM table in data/gemm/'s "
                          "format."}
    if gpu:
        document["gpus"] = {gpu: constants}
    else:
        document["defaults"] = constants
    raw = copy.deepcopy(measurements)
    raw["peak_tflops"] = peak_tflops
    document["_measurements"] = raw
    if measurements.get("gemm"):
        document["_gemm_table"] = gemm_table(measurements, peak_flops)
    return document, warnings
