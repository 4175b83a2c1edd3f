"""gpuplan-measure's mechanics on the CPU: GEMM shapes against hand counts, nccl-tests' bus-bandwidth factors, the
collectives over gloo in 2 processes, and the files it writes read by the gpuplan program."""
import json
import os
import subprocess
import sys

import pytest

import gpuplan
from conftest import ROOT, cli
from gpuplan import _measure_comm as comm
from gpuplan._measure_output import fit_attention, perf_overlay, time_weighted_gemm_efficiency
from gpuplan._measure_shapes import gemm_shapes

ESTIMATE = ["estimate", "--model", "llama-3.1-8b", "--system", "dgx-h100", "--nodes", "1", "--tp", "2",
            "--seq-len", "4096", "--micro-batch", "1", "--global-batch", "64", "--json"]


def test_llama_3_1_8b_gemm_shapes_at_tp_2():
    arch = gpuplan.model(model="llama-3.1-8b").architecture
    shapes = {s.name: s for s in gemm_shapes(arch, tp=2, seq_len=4096, micro_batch=1)}
    tokens = 1 * 4096
    # Llama-3.1-8B: hidden 4096, 32 query heads, 8 KV heads of 128, gated MLP of 14336, vocabulary 128256.
    assert (shapes["qkv"].rows, shapes["qkv"].outputs, shapes["qkv"].inputs) == (tokens, (32 + 2 * 8) * 128 // 2, 4096)
    assert (shapes["attention_out"].outputs, shapes["attention_out"].inputs) == (4096, 32 * 128 // 2)
    assert (shapes["mlp_up"].outputs, shapes["mlp_up"].inputs) == (2 * 14336 // 2, 4096)
    assert (shapes["mlp_down"].outputs, shapes["mlp_down"].inputs) == (4096, 14336 // 2)
    assert (shapes["logits"].outputs, shapes["logits"].inputs, shapes["logits"].count) == (128256 // 2, 4096, 1)
    assert shapes["qkv"].count == 32


def test_mixtral_expert_gemms_at_ep_2():
    arch = gpuplan.model(model="mixtral-8x7b").architecture
    shapes = {s.name: s for s in gemm_shapes(arch, tp=1, seq_len=4096, ep=2)}
    # 8 experts, top 2, ep 2: 4 local experts, each 4096 tokens x 2 / 8 experts x 2 ranks = 2048 rows.
    up = shapes["expert_up"]
    assert (up.rows, up.outputs, up.inputs, up.batch) == (2048, 2 * 14336, 4096, 4)
    assert (shapes["router"].outputs, shapes["router"].inputs) == (8, 4096)
    assert "mlp_up" not in shapes


def test_busbw_factors_are_nccl_tests():
    # nccl-tests doc/PERFORMANCE.md: all-reduce 2(n-1)/n, all-gather, reduce-scatter and all-to-all (n-1)/n.
    assert comm.busbw_factor("all_reduce", 2) == 1.0
    assert comm.busbw_factor("all_reduce", 8) == 14 / 8
    for name in ("all_gather", "reduce_scatter", "all_to_all"):
        assert comm.busbw_factor(name, 2) == 0.5
        assert comm.busbw_factor(name, 8) == 7 / 8


def test_attention_fit_recovers_the_curve():
    # Rows made from eff(L) = 0.6 L / (L + 300) at a 1 TFLOP/s peak: time = 3.5 x forward FLOPs / (eff x peak).
    rows = []
    for length in (512, 1024, 4096):
        eff = 0.6 * length / (length + 300)
        rows.append({"seq_len": length, "forward_flops": 1e12, "forward_s": 1.0 / eff, "backward_s": 2.5 / eff})
    efficiency, half_length = fit_attention(rows, 1e12)
    assert efficiency == pytest.approx(0.6, rel=1e-9)
    assert half_length == pytest.approx(300, rel=1e-9)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One CPU run: two small GEMM shapes (one grouped), attention at three lengths, four collectives over gloo
    in 2 spawned processes."""
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("measure")
    out = folder / "perf.json"
    done = subprocess.run(
        [sys.executable, "-m", "gpuplan.measure", "--device", "cpu", "--shapes", "128,256,256;64,128,128,4",
         "--dtype", "fp32", "--gpu", "h100-sxm-80gb", "--peak-tflops", "0.01", "--warmup", "1", "--iters", "2",
         "--repeats", "3", "--attention-seq-lens", "32,64,128", "--attention-head-dims", "32",
         "--attention-heads", "2", "--attention-tokens", "128", "--ranks", "2", "--comm-sizes", "1M,4M,16M",
         "--comm-warmup", "1", "--comm-iters", "3", "--out", str(out)],
        capture_output=True, text=True, timeout=120, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stdout + done.stderr
    return out, json.loads(out.read_text()), folder / "perf-comm"


def test_nccl_tests_outputs_follow_the_factors(measured):
    _, document, comm_dir = measured
    rows = document["_measurements"]["collectives"]["rows"]
    assert {r["collective"] for r in rows} == set(comm.COLLECTIVES)
    for r in rows:
        algbw = r["size_bytes"] / (r["time_us"] * 1e-6) / 1e9
        factor = 1.0 if r["collective"] == "all_reduce" else 0.5   # 2 ranks, derived above
        assert r["algbw_GBps"] == pytest.approx(algbw)
        assert r["busbw_GBps"] == pytest.approx(algbw * factor)
    # gpuplan reads them as nccl-tests outputs of 2 ranks, the collective from the text.
    files = sorted(str(p) for p in comm_dir.glob("*_perf.txt"))
    fit = cli("comm", "--calibrate", *files, "--json")
    assert sorted((f["collective"], f["ranks"]) for f in fit["files"]) == sorted(
        [("allreduce", 2), ("allgather", 2), ("reducescatter", 2), ("alltoall", 2)])
    assert all(not f["warnings"] for f in fit["files"]), fit["files"]


def test_perf_file_is_read_by_estimate(measured):
    out, document, comm_dir = measured
    section = document["gpus"]["h100-sxm-80gb"]
    assert section["measured_gemm_efficiency"]["value"] == 0
    assert section["gemm_max_efficiency"]["source"].startswith("measured by gpuplan-measure on cpu, torch ")
    cli(*ESTIMATE, "--perf", str(out))
    # The per-shape table has data/gemm/'s layout: the GEMM keys every shipped table has (attention rows are
    # optional), rows of [M, N, K, forward, dgrad, wgrad].
    with open(os.path.join(ROOT, "data", "gemm", "a100-pcie-80gb-bf16.json")) as f:
        shipped = json.load(f)
    table = document["_gemm_table"]
    assert set(table) == set(shipped)
    assert [row[:3] for row in table["dense"]] == [[128, 256, 256]]
    assert [row[:3] for row in table["grouped"]] == [[64, 128, 128]]
    cli(*ESTIMATE, "--perf", str(out), "--comm-calibration", str(comm_dir / "comm-calibration.json"))


def test_lower_efficiencies_lengthen_the_step(measured, tmp_path):
    _, document, _ = measured
    raw = document["_measurements"]
    # The achieved rates (efficiency at a peak of 1 FLOP/s); a peak at which the faster runs at 0.8, then twice
    # that peak: every efficiency halves (efficiency = achieved / peak).
    gemm_rate = time_weighted_gemm_efficiency(raw["gemm"], 1.0)
    attention_rate, _ = fit_attention(raw["attention"]["rows"], 1.0)
    peak = max(gemm_rate, attention_rate) / 0.8 / 1e12
    steps = []
    for p in (peak, 2 * peak):
        overlay, _ = perf_overlay(raw, peak_tflops=p)
        path = tmp_path / f"perf-{p}.json"
        path.write_text(json.dumps(overlay))
        steps.append((overlay["gpus"]["h100-sxm-80gb"], cli(*ESTIMATE, "--perf", str(path))["time"]))
    (fast, fast_time), (slow, slow_time) = steps
    assert max(fast["gemm_max_efficiency"]["value"], fast["flash_attention_efficiency"]["value"]) == 0.8
    # The kernel timed is PyTorch's own attention: jobs that call it take the measurement too.
    assert fast["sdpa_attention_efficiency"]["value"] == fast["flash_attention_efficiency"]["value"]
    for key in ("gemm_max_efficiency", "flash_attention_efficiency"):
        if fast[key]["value"] >= 0.02:   # not held at gpuplan's lower bound 0.01 after halving
            assert slow[key]["value"] == pytest.approx(fast[key]["value"] / 2, abs=1e-4)
    assert slow_time["step_s"] > fast_time["step_s"]
    assert slow_time["breakdown"]["forward"] > fast_time["breakdown"]["forward"]


def test_every_rank_times_the_same_gemm(measured):
    _, document, _ = measured
    gemm = document["_measurements"]["collectives"]["gemm_speed"]
    assert len(gemm["seconds_by_rank"]) == 2 and all(s > 0 for s in gemm["seconds_by_rank"])
    # CPU processes say nothing of GPUs: no spread is written from them.
    assert "gpu_speed_spread" not in document["gpus"]["h100-sxm-80gb"]


def _gpu_speed_measurement(seconds_by_rank):
    return {"source": "test", "device": "NVIDIA H100", "device_type": "cuda", "gpu": "h100-sxm-80gb",
            "peak_tflops": 989.4, "dtype": "bf16",
            "collectives": {"rows": [], "gemm_speed": {"seconds_by_rank": seconds_by_rank, "size": 8192,
                                                       "dtype": "bfloat16"}}}


def test_gpu_speed_spread_is_the_ranks_relative_standard_deviation(tmp_path):
    # Times 1.0, 1.1, 0.9, 1.0 ms: mean 1.0 ms, sample variance (0 + 0.01 + 0.01 + 0) / 3 ms^2.
    document, warnings = perf_overlay(_gpu_speed_measurement([1.0e-3, 1.1e-3, 0.9e-3, 1.0e-3]))
    entry = document["gpus"]["h100-sxm-80gb"]["gpu_speed_spread"]
    assert entry["value"] == pytest.approx((0.02 / 3) ** 0.5, abs=1e-4)
    assert not warnings
    path = tmp_path / "perf.json"
    path.write_text(json.dumps(document))
    # Two nodes of H100: the wider spread lengthens the wait for the slowest GPU.
    args = ["estimate", "--model", "llama-3.1-8b", "--system", "dgx-h100", "--nodes", "2", "--json"]
    assert cli(*args, "--perf", str(path))["time"]["breakdown"]["slowest_gpu"] > \
        cli(*args)["time"]["breakdown"]["slowest_gpu"]
    # One GPU three times as slow as the other (spread 0.71): more than gpuplan accepts, written as its bound
    # with a warning.
    document, warnings = perf_overlay(_gpu_speed_measurement([1.0e-3, 3.0e-3]))
    assert document["gpus"]["h100-sxm-80gb"]["gpu_speed_spread"]["value"] == 0.5
    assert len(warnings) == 1 and "gpu_speed_spread" in warnings[0]


def test_missing_model_is_one_line_exit_2():
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, "-m", "gpuplan.measure", "--device", "cpu", "--peak-tflops", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("gpuplan-measure: error: --model: missing")
