#!/usr/bin/python3
"""Independent oracle: the bytes and kernels of eager PyTorch's elementwise ops in a Llama-style layer.

Runs each op as Hugging Face transformers' Llama modules write it (LlamaRMSNorm, LlamaMLP's gate, apply_rotary_pos_emb,
the attention output's transpose(1, 2).contiguous()), torchtitan's repeat_kv and, for comparison, torch's native
layer_norm and gelu,
under a dispatch mode that logs every aten op of the forward and of autograd's backward. Each op that is not a
view is one kernel; it reads the distinct elements of its tensor inputs (a broadcast input once) and writes its
outputs. Prints one JSON object per op: bytes per element of the op's main input and kernels, forward and backward.

Usage: validation/torch_eager_traffic.py [--verbose]
"""
import json
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

BF16 = torch.bfloat16


def distinct_elements(t):
    """Elements an op reads from `t`: a broadcast (stride 0) dimension is read once."""
    n = 1
    for size, stride in zip(t.shape, t.stride()):
        if stride != 0:
            n *= size
    return n


class KernelLog(TorchDispatchMode):
    """Every aten op that computes a tensor (views excluded): (name, bytes read, bytes written)."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        # _unsafe_view (reshape's view of a fresh copy) shares its input's storage without saying so in its schema.
        is_view = func is torch.ops.aten._unsafe_view.default or any(
            r.alias_info is not None for r in func._schema.returns)
        inputs = [a for a in tree_flatten((args, kwargs or {}))[0] if isinstance(a, torch.Tensor)]
        outputs = [a for a in tree_flatten(out)[0] if isinstance(a, torch.Tensor)]
        if not is_view and outputs:
            read = sum(distinct_elements(t) * t.element_size() for t in inputs)
            written = sum(t.numel() * t.element_size() for t in outputs)
            self.ops.append((str(func), read, written))
        return out


def traffic(inputs, forward, elements):
    """Bytes per element and kernels of `forward(*inputs)` and of its backward (torch.autograd.grad, so that no
    gradient is accumulated into a leaf's .grad, which a layer's activations never are)."""
    with KernelLog() as fwd:
        y = forward(*inputs)
    gradient = torch.ones_like(y)
    with KernelLog() as bwd:
        torch.autograd.grad(y, [t for t in inputs if t.requires_grad], gradient)
    total = lambda log: sum(r + w for _, r, w in log.ops) / elements
    return {"forward_bytes": round(total(fwd), 2), "forward_kernels": len(fwd.ops),
            "backward_bytes": round(total(bwd), 2), "backward_kernels": len(bwd.ops),
            "forward_ops": fwd.ops, "backward_ops": bwd.ops}


def hf_rms_norm(x, weight, eps=1e-6):
    h = x.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    return weight * h.to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def hf_rope(q, cos, sin):
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin)


def hf_rotated_query_layout(tokens=16, heads=8, head_dim=128):
    """The layout Hugging Face's Llama attention hands its query to scaled_dot_product_attention in: q_proj's output
    viewed as (batch, sequence, heads, dim) and transposed to (batch, heads, sequence, dim), then rotated by
    apply_rotary_pos_emb. Returns whether transposing it back to (batch, sequence, heads, dim) is contiguous, the
    layout in which PyTorch's fused kernels then allocate the output (flash_api.cpp: empty_like of the query so
    transposed)."""
    projected = torch.randn(1, tokens, heads * head_dim, dtype=BF16)
    query = projected.view(1, tokens, heads, head_dim).transpose(1, 2)
    cos, sin = torch.randn(1, tokens, head_dim, dtype=BF16), torch.randn(1, tokens, head_dim, dtype=BF16)
    return hf_rope(query, cos, sin).transpose(1, 2).is_contiguous()


def repeat_kv(x, n_rep):
    """torchtitan/models/llama3/model/model.py: grouped K or V expanded to every query head."""
    bs, slen, n_kv_heads, head_dim = x.shape
    return torch.unsqueeze(x, dim=3).expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(
        bs, slen, n_kv_heads * n_rep, head_dim)


def residual_join(inputs, elements):
    """The residual add x + branch(x): forward one add; backward the add that joins the branch's gradient to the
    stream's, measured as the block's backward less the branch's own."""
    branch = lambda x: x * 2
    block = traffic(inputs, lambda x: x + branch(x), elements)
    alone = traffic(inputs, branch, elements)
    joined = {k: round(block[k] - alone[k], 2) for k in ("forward_bytes", "forward_kernels", "backward_bytes",
                                                          "backward_kernels")}
    return {**joined, "forward_ops": block["forward_ops"], "backward_ops": block["backward_ops"]}


def measurements():
    # Wide rows and many heads, so that what is per row (the norm's statistics) or per position (cos and sin) is
    # negligible against what is per element.
    tokens, hidden, heads, head_dim = 16, 8192, 256, 128
    leaf = lambda *shape: torch.randn(*shape, dtype=BF16, requires_grad=True)
    fixed = lambda *shape: torch.randn(*shape, dtype=BF16)
    n = tokens * hidden
    q = heads * tokens * head_dim
    return {
        "rms_norm (Hugging Face LlamaRMSNorm)": traffic((leaf(tokens, hidden), leaf(hidden)), hf_rms_norm, n),
        "layer_norm (torch native)": traffic((leaf(tokens, hidden), leaf(hidden), leaf(hidden)),
                                             lambda x, w, b: torch.nn.functional.layer_norm(x, (hidden,), w, b), n),
        "silu(gate) * up (LlamaMLP)": traffic((leaf(tokens, hidden), leaf(tokens, hidden)),
                                              lambda g, u: torch.nn.functional.silu(g) * u, n),
        "gelu (torch native)": traffic((leaf(tokens, hidden),), torch.nn.functional.gelu, n),
        "rotary embedding (apply_rotary_pos_emb, per q or k element)":
            traffic((leaf(1, heads, tokens, head_dim), fixed(1, tokens, head_dim), fixed(1, tokens, head_dim)),
                    hf_rope, q),
        "residual add (x + branch(x))": residual_join((leaf(tokens, hidden),), n),
        "attention output transpose(1, 2).contiguous()":
            traffic((leaf(1, heads, tokens, head_dim),), lambda o: o.transpose(1, 2).contiguous(), q),
        # PyTorch's fused scaled_dot_product_attention kernels (flash, memory-efficient) allocate the output like
        # the query and return it transposed (aten/src/ATen/native/transformers/cuda/attention.cu): with torchtitan's
        # (batch, sequence, heads, dim) query the module's transpose(1, 2).contiguous() finds it contiguous.
        "fused attention output transpose(1, 2).contiguous()":
            traffic((leaf(1, tokens, heads, head_dim),), lambda o: o.transpose(1, 2).transpose(1, 2).contiguous(), q),
        "repeat_kv (torchtitan, 4 query heads per group, per K or V element)":
            traffic((leaf(1, tokens, heads // 4, head_dim),), lambda x: repeat_kv(x, 4), q // 4),
    }


def main():
    verbose = "--verbose" in sys.argv
    for name, t in measurements().items():
        if not verbose:
            t = {k: v for k, v in t.items() if not k.endswith("_ops")}
        print(json.dumps({"op": name, **t}))


if __name__ == "__main__":
    main()
