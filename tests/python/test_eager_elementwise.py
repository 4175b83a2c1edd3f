"""Eager PyTorch modules (torchtitan without torch.compile, Hugging Face's) priced at the traffic PyTorch itself
dispatches for them: the difference between an eager and a compiled torchtitan step must be what
validation/torch_eager_traffic.py counts through PyTorch's dispatcher, over HBM, plus the kernels' launch gaps."""
import json
import os
import sys

import pytest

from conftest import ROOT, cli

pytest.importorskip("torch")
sys.path.insert(0, os.path.join(ROOT, "validation"))
import torch_eager_traffic as oracle  # noqa: E402

# Llama-3.1-8B's config.json: 32 layers, hidden 4096, intermediate 14336, 32 heads and 8 KV heads of 128.
LAYERS, HIDDEN, FFN, HEADS, KV_HEADS, HEAD_DIM = 32, 4096, 14336, 32, 8, 128
TOKENS = 8192
E = 2  # bf16 activations
H100_HBM_BPS = 3350e9  # NVIDIA H100 SXM datasheet: 3.35 TB/s


def breakdown(*extra, model=("--model", "llama-3.1-8b")):
    args = ["estimate", *model, "--system", "dgx-h100", "--nodes", "1", "--framework", "torchtitan", "--seq-len",
            str(TOKENS), "--global-batch", "8", *extra, "--json"]
    return cli(*args)["time"]["breakdown"]


def seconds(extra_bytes, extra_kernels):
    with open(os.path.join(ROOT, "data", "perf.json")) as f:
        defaults = json.load(f)["defaults"]
    efficiency = defaults["memory_bound_efficiency"]["value"]
    return extra_bytes / (H100_HBM_BPS * efficiency) + extra_kernels * defaults["kernel_overhead_s"]["value"]


def measured():
    ops = oracle.measurements()
    pick = lambda prefix: next(v for k, v in ops.items() if k.startswith(prefix))
    # torchtitan's attention runs through PyTorch's fused scaled_dot_product_attention kernels.
    return pick("rms_norm"), pick("silu(gate) * up"), pick("rotary embedding"), pick("fused attention output")


# Fused kernels (Megatron-Core with Transformer Engine) read and write each tensor once forward, one kernel per
# op (RoPE one per q and k), and move twice that backward in two: norm 2e, gated activation 3e (two inputs, one
# output), RoPE 2e per element, no copy of the attention output. The residual adds are one kernel either way.
FUSED_FORWARD = {"norm": 2 * E, "glu": 3 * E, "rope": 2 * E, "copy": 0}


def test_eager_forward_moves_what_pytorch_dispatches():
    norm, glu, rope, copy = measured()
    rows, rotated, attended = TOKENS * HIDDEN, TOKENS * (HEADS + KV_HEADS) * HEAD_DIM, TOKENS * HEADS * HEAD_DIM
    f = FUSED_FORWARD
    per_layer = (2 * (norm["forward_bytes"] - f["norm"]) * rows + (glu["forward_bytes"] - f["glu"]) * TOKENS * FFN
                 + (rope["forward_bytes"] - f["rope"]) * rotated + copy["forward_bytes"] * attended)
    extra_bytes = LAYERS * per_layer + (norm["forward_bytes"] - f["norm"]) * rows   # and the final norm
    per_layer_kernels = (2 * (norm["forward_kernels"] - 1) + glu["forward_kernels"] - 1
                         + 2 * (rope["forward_kernels"] - 1) + copy["forward_kernels"])
    extra_kernels = LAYERS * per_layer_kernels + norm["forward_kernels"] - 1
    eager, compiled = breakdown(), breakdown("--compile")
    assert eager["forward"] - compiled["forward"] == pytest.approx(seconds(extra_bytes, extra_kernels), rel=0.01)


def test_eager_backward_moves_what_autograd_dispatches():
    norm, glu, rope, copy = measured()
    rows, rotated = TOKENS * HIDDEN, TOKENS * (HEADS + KV_HEADS) * HEAD_DIM
    f = {k: 2 * v for k, v in FUSED_FORWARD.items()}
    per_layer = (2 * (norm["backward_bytes"] - f["norm"]) * rows + (glu["backward_bytes"] - f["glu"]) * TOKENS * FFN
                 + (rope["backward_bytes"] - f["rope"]) * rotated + copy["backward_bytes"] * TOKENS * HEADS * HEAD_DIM)
    extra_bytes = LAYERS * per_layer + (norm["backward_bytes"] - f["norm"]) * rows
    per_layer_kernels = (2 * (norm["backward_kernels"] - 2) + glu["backward_kernels"] - 2
                         + 2 * (rope["backward_kernels"] - 2) + copy["backward_kernels"])
    extra_kernels = LAYERS * per_layer_kernels + norm["backward_kernels"] - 2
    eager, compiled = breakdown(), breakdown("--compile")
    assert eager["backward"] - compiled["backward"] == pytest.approx(seconds(extra_bytes, extra_kernels), rel=0.01)


def test_ops_that_are_one_kernel_either_way_cost_the_same():
    # torch's layer_norm and gelu, and the residual add (and the add that joins its gradient to the stream), are
    # one native kernel each way, as their fused counterparts: a GPT-2-style layer (LayerNorm, GELU, no RoPE)
    # costs the same eager and compiled with PyTorch's fused attention kernels, and but for the attention output's
    # copy with eager attention (matmul, softmax, matmul).
    ops = oracle.measurements()
    for name in ("layer_norm (torch native)", "gelu (torch native)", "residual add (x + branch(x))"):
        assert (ops[name]["forward_kernels"], ops[name]["backward_kernels"]) == (1, 1), name
    gpt = ("--model", "gpt2", "--layers", "12", "--hidden", "2048", "--heads", "16", "--ffn-hidden", "8192",
           "--max-positions", str(TOKENS))
    for attention, output in (("flash", "fused attention output"), ("eager", "attention output")):
        copy = next(v for k, v in ops.items() if k.startswith(output))
        eager, compiled = breakdown("--attention", attention, model=gpt), breakdown(
            "--attention", attention, "--compile", model=gpt)
        extra_bytes = 12 * copy["forward_bytes"] * TOKENS * 2048
        extra_kernels = 12 * copy["forward_kernels"]
        assert eager["forward"] - compiled["forward"] == pytest.approx(seconds(extra_bytes, extra_kernels),
                                                                       rel=0.01, abs=1e-12), attention
        assert eager["backward"] == pytest.approx(compiled["backward"], rel=1e-9), attention


def test_hugging_face_rotated_query_keeps_the_projection_layout():
    # (q * cos) + (rotate_half(q) * sin): the product with q keeps q's strides, rotate_half's torch.cat is
    # contiguous, and the sum takes the layout of its first operand. The query stays (batch, sequence, heads, dim) in
    # memory, so the fused kernel's output comes back contiguous after transpose(1, 2) and the module's
    # .contiguous() copies nothing, as under torchtitan (src/perf/layer_comm.cpp, attention_output_copied).
    assert oracle.hf_rotated_query_layout()


def test_repeat_kv_moves_what_pytorch_dispatches():
    # tests/repeat_kv_time_test.cpp prices torchtitan's repeat_kv as one kernel per K or V each way, reading each
    # element once and writing its copy for every query head of its group (forward), then the reverse (backward,
    # expand's sum): (1 + 4) x 2 bytes per element at 4 heads per group. PyTorch dispatches exactly that.
    per_element = next(v for k, v in oracle.measurements().items() if k.startswith("repeat_kv"))
    assert (per_element["forward_bytes"], per_element["forward_kernels"]) == ((1 + 4) * E, 1)
    assert (per_element["backward_bytes"], per_element["backward_kernels"]) == ((1 + 4) * E, 1)
