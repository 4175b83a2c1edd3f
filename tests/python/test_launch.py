"""Launch files from Python: from_= reads one as --from does, emit= writes one as --emit does, with the same JSON."""
import os

import pytest

import gpuplan
from conftest import cli

SCRIPT = os.path.join("tests", "data", "frameworks", "megatron", "train_llama3_8b_h100_fp8.sh")


def test_from_reads_a_script_as_the_command_line_does():
    r = gpuplan.estimate(from_=SCRIPT, system="dgx-h100", tp=2)
    assert r == cli("estimate", "--from", SCRIPT, "--system", "dgx-h100", "--tp", "2", "--json")
    assert r.memory.layout.tp == 2           # given beside the file: it wins
    assert r.memory.training.seq_len == 8192 # the script's --seq-length


def test_emit_returns_the_files_and_they_read_back(tmp_path):
    p = gpuplan.estimate(model="llama-3.1-8b", system="dgx-h100", nodes=1, tp=2, global_batch=64,
                         framework="torchtitan", emit="torchtitan", out=str(tmp_path))
    names = [f.name for f in p.launch_files]
    assert names == ["torchtitan.toml", "train_torchtitan.sh"]
    assert sorted(os.listdir(tmp_path)) == sorted(names)
    back = gpuplan.estimate(from_=str(tmp_path / "torchtitan.toml"), system="dgx-h100")
    assert back.time.step_s == p.time.step_s
    assert back.memory.per_gpu.total == p.memory.per_gpu.total


def test_a_bad_launch_file_is_an_input_error(tmp_path):
    bad = tmp_path / "train.sh"
    bad.write_text("torchrun pretrain_gpt.py --tensor-model-parallel-size 2 --no-such-flag 3\n")
    with pytest.raises(gpuplan.InputError) as e:
        gpuplan.estimate(from_=str(bad), model="llama-3.1-8b")
    assert e.value.field == "from"
    assert "--no-such-flag" in str(e.value)
