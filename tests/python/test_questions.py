"""Every function of the module gives what the command line's --json gives for the same inputs."""
import json
import os

import pytest

import gpuplan
from conftest import cli


def without_timing(result):
    result = dict(result)
    result.pop("search_seconds", None)
    return result


def test_memory_params_example():
    r = gpuplan.memory(params=7e9, precision="fp16", optimizer="adam")
    # 2 + 4 + 4 + 4 + 4 bytes per parameter: weights, fp32 master, fp32 gradients, Adam's two moments.
    states = sum(r["per_gpu"][k] for k in ("weights", "master_weights", "gradients", "optimizer_states"))
    assert states == 18 * 7_000_000_000
    assert r == cli("memory", "--params", "7e9", "--precision", "fp16", "--optimizer", "adam", "--json")


def test_memory_model_layout_matches_cli():
    r = gpuplan.memory(model="llama-3.1-70b", gpu="h100-sxm-80gb", gpus=64, tp=8, pp=4, seq_len=8192,
                       global_batch=512, zero=1, sequence_parallel=True, recompute="selective", all_stages=True)
    assert r == cli("memory", "--model", "llama-3.1-70b", "--gpu", "h100-sxm-80gb", "--gpus", "64", "--tp", "8",
                    "--pp", "4", "--seq-len", "8192", "--global-batch", "512", "--zero", "1", "--sequence-parallel",
                    "--recompute", "selective", "--all-stages", "--json")
    assert r.per_gpu.total == r["per_gpu"]["total"]
    assert len(r.stages) == 4


def test_negated_and_size_options():
    r = gpuplan.memory(model="llama-2-7b", gpus=8, seq_len=4096, gpu_memory="40GB", no_master_weights=True,
                       no_overheads=True)
    assert r == cli("memory", "--model", "llama-2-7b", "--gpus", "8", "--seq-len", "4096", "--gpu-memory", "40GB",
                    "--no-master-weights", "--no-overheads", "--json")
    assert r.per_gpu.master_weights == 0 and r.per_gpu.runtime == 0


def test_model_by_name_and_path(data):
    assert gpuplan.model("llama-3.1-70b") == cli("model", "llama-3.1-70b", "--json")
    path = os.path.join("tests", "data", "hf-configs", "deepseek-ai--DeepSeek-V3", "config.json")
    assert gpuplan.model(path, seq_len=4096) == cli("model", path, "--seq-len", "4096", "--json")


def test_model_as_dict_and_transformers_style_object(data):
    folder = os.path.join("tests", "data", "hf-configs", "meta-llama--Llama-3.1-8B")
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)

    class PretrainedConfigLike:  # what transformers' PretrainedConfig offers
        def to_dict(self):
            return dict(config, _name_or_path="meta-llama/Llama-3.1-8B")

    expected = cli("model", folder, "--json")
    for model in (config, PretrainedConfigLike()):
        r = gpuplan.model(model)
        assert r["params"] == expected["params"] and r["architecture"] == expected["architecture"]
    assert gpuplan.model(PretrainedConfigLike()).name == "meta-llama/Llama-3.1-8B"
    # In any question.
    m = gpuplan.memory(model=PretrainedConfigLike(), gpus=8, tp=8)
    assert m == dict(cli("memory", "--model", folder, "--gpus", "8", "--tp", "8", "--json"),
                     training=dict(m["training"]))
    assert m.training.model == "meta-llama/Llama-3.1-8B"


def test_estimate_matches_cli():
    r = gpuplan.estimate(model="mixtral-8x7b", system="dgx-h100", nodes=2, tp=2, pp=2, dp=4, ep=4, seq_len=4096,
                         global_batch=64, zero=1, sequence_parallel=True, tp_overlap=True)
    assert r == cli("estimate", "--model", "mixtral-8x7b", "--system", "dgx-h100", "--nodes", "2", "--tp", "2",
                    "--pp", "2", "--dp", "4", "--ep", "4", "--seq-len", "4096", "--global-batch", "64", "--zero", "1",
                    "--sequence-parallel", "--tp-overlap", "--json")
    assert abs(sum(r.time.breakdown.values()) - r.time.step_s) <= 1e-9 * r.time.step_s


def test_plan_matches_cli_and_lists():
    r = gpuplan.plan(model="llama-3.1-8b", system="dgx-h100", nodes=1, seq_len=4096, global_batch=64, top=2,
                     threads=1, tp=[1, 2, 4], zero="1,2")
    expected = cli("plan", "--model", "llama-3.1-8b", "--system", "dgx-h100", "--nodes", "1", "--seq-len", "4096",
                   "--global-batch", "64", "--top", "2", "--threads", "1", "--tp", "1,2,4", "--zero", "1,2", "--json")
    assert without_timing(r) == without_timing(expected)
    assert all(p.layout.tp in (1, 2, 4) and p.layout.zero in (1, 2) for p in r.plans)


def test_size_matches_cli_and_reports_progress():
    seen = []
    r = gpuplan.size(model="llama-3.1-8b", tokens="100B", systems=["dgx-h100", "dgx-b200"], nodes="1:4", threads=2,
                     progress=lambda done, total: seen.append((done, total)))
    expected = cli("size", "--model", "llama-3.1-8b", "--tokens", "100B", "--systems", "dgx-h100,dgx-b200",
                   "--nodes", "1:4", "--threads", "1", "--json")
    assert without_timing(r) == without_timing(expected)
    assert len(r.points) == 6 and seen[-1] == (6, 6)
    assert r.points[0].gpu_hours == pytest.approx(r.points[0].days * 24 * r.points[0].gpus, rel=1e-12)


def test_comm_and_calibrate_match_cli(tmp_path):
    r = gpuplan.comm("alltoall", size="256MiB", ranks=64, ranks_per_node=4, concurrent_groups=2, system="dgx-a100")
    assert r == cli("comm", "alltoall", "--size", "256MiB", "--ranks", "64", "--ranks-per-node", "4",
                    "--concurrent-groups", "2", "--system", "dgx-a100", "--json")
    logs = [os.path.join("tests", "data", "nccl-tests", "a100-8gpu-allreduce", f"AR_GPU{n}_1M_1024M_LUT.csv")
            for n in (2, 8)]
    out = str(tmp_path / "calibration.json")
    c = gpuplan.comm(calibrate=logs, system="dgx-a100", out=out)
    assert c == cli("comm", "--calibrate", *logs, "--system", "dgx-a100", "--out", out, "--json")
    assert c.written == out and json.load(open(out)) == c.calibration
    unwritten = gpuplan.calibrate(logs, system="dgx-a100")
    assert "written" not in unwritten and unwritten == {k: v for k, v in c.items() if k != "written"}


def test_calibrate_runs_matches_cli(tmp_path):
    runs = os.path.join("tests", "data", "runs", "a100-vtrain-6.csv")
    out = str(tmp_path / "perf.json")
    r = gpuplan.calibrate(runs=runs, out=out)
    assert r == cli("calibrate", "--runs", runs, "--out", out, "--json")
    fitted = json.load(open(out))["gpus"]["a100-sxm-80gb"]
    assert {c["name"]: c["after"] for c in r.runs_fit.constants} == {k: v["value"] for k, v in fitted.items()}


def test_topo_from_path_and_text(data):
    path = os.path.join("tests", "data", "topo", "01_dgx-a100_nv12_10nic_tabs.txt")
    expected = cli("topo", path, "--json")
    assert gpuplan.topo(path) == expected
    with open(path) as f:
        assert gpuplan.topo(f.read())["bandwidth_GBps"] == expected["bandwidth_GBps"]
    nvlink = os.path.join("tests", "data", "nvlink", "nvlink-status_h800_8links.txt")
    h800 = os.path.join("tests", "data", "topo", "06_h800_nv8_4nic_clipped-copy-paste.txt")
    assert gpuplan.topo(h800, nvlink=nvlink) == cli("topo", h800, "--nvlink", nvlink, "--json")


def test_catalog_matches_cli():
    assert gpuplan.catalog("gpus") == cli("catalog", "gpus", "--json")
    assert gpuplan.catalog("systems", "dgx-h100") == cli("catalog", "systems", "dgx-h100", "--json")
    assert gpuplan.catalog() == cli("catalog", "--json")


def test_options_document_every_function():
    for question, function in (("memory", gpuplan.memory), ("plan", gpuplan.plan), ("comm", gpuplan.comm)):
        names = [o.name for o in gpuplan.options(question)]
        assert "seq_len" in names or question == "comm"
        for name in names:
            assert f"    {name}: " in function.__doc__
