"""The GEMM shapes one rank runs for a model's layers, as gpuplan's step-time model prices them.

Each linear layer is keyed by its forward GEMM (rows M, outputs N, inputs K): the input (M x K) times the weight
(K x N), after the tensor-, context- and expert-parallel division. The layout follows src/perf/layer_cost.cpp, so
that a table measured for these shapes is looked up at exactly the shapes the estimate asks for:

* q, k and v (and MLA's low-rank) projections as one GEMM, N = their outputs / tp;
* the output projection, K = heads x v head dim / tp;
* the MLP (gated: gate and up as one GEMM of 2 x ffn / tp outputs) and its down projection;
* MoE: the router, the routed experts as grouped GEMMs of tokens x top_k x ep / experts rows each, and the shared
  experts;
* the logits, N = vocab / tp.

Needs no PyTorch.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class GemmShape:
    name: str
    rows: int        # M: tokens (or tokens per expert)
    outputs: int     # N
    inputs: int      # K
    batch: int = 1   # > 1: a grouped GEMM of this many experts, each of this shape
    count: int = 1   # how many times one step runs it per microbatch (layers)

    def flops(self):
        """FLOPs of one forward GEMM (all experts of a grouped one)."""
        return 2 * self.rows * self.outputs * self.inputs * self.batch


def _attention_outputs(arch):
    """The q, k, v projection outputs as one GEMM; with MLA its low-rank projections, per unit of hidden."""
    hidden, heads = arch["hidden"], arch["heads"]
    mla = arch.get("mla")
    if not mla:
        return (heads + 2 * arch["kv_heads"]) * arch["head_dim"]
    qk = mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"]
    q_rank = mla.get("q_lora_rank") or 0
    q_params = hidden * q_rank + q_rank * heads * qk if q_rank else hidden * heads * qk
    kv_params = hidden * (mla["kv_lora_rank"] + mla["qk_rope_head_dim"]) + \
        mla["kv_lora_rank"] * heads * (mla["qk_nope_head_dim"] + mla["v_head_dim"])
    return (q_params + kv_params) // hidden


def _v_head_dim(arch):
    mla = arch.get("mla")
    return mla["v_head_dim"] if mla else arch["head_dim"]


def _divide(value, parts, what):
    if value % parts:
        raise ValueError(f"{what} {value} is not divisible by {parts}")
    return value // parts


def _mlp_shapes(prefix, tokens, hidden, ffn, up, tp, count):
    return [GemmShape(f"{prefix}_up", tokens, _divide(up * ffn, tp, f"{prefix} outputs"), hidden, 1, count),
            GemmShape(f"{prefix}_down", tokens, hidden, _divide(ffn, tp, f"{prefix} inputs"), 1, count)]


def _moe_shapes(arch, tokens, tp, ep, etp, moe_layers):
    moe, hidden = arch["moe"], arch["hidden"]
    up = 2 if arch.get("mlp") == "gated" else 1
    experts, topk, ffn = moe["routed_experts"], moe["top_k"], moe["expert_ffn_hidden"]
    local = max(1, experts // ep)
    rows = max(1, tokens * topk * ep // experts)   # balanced routing
    shapes = [GemmShape("router", tokens, experts, hidden, 1, moe_layers),
              GemmShape("expert_up", rows, _divide(up * ffn, etp, "expert outputs"), hidden, local, moe_layers),
              GemmShape("expert_down", rows, hidden, _divide(ffn, etp, "expert inputs"), local, moe_layers)]
    shared = moe.get("shared_experts", 0)
    if shared:
        shared_ffn = shared * moe.get("shared_expert_ffn_hidden", ffn)
        shapes += _mlp_shapes("shared_expert", tokens, hidden, shared_ffn, up, tp, moe_layers)
    return shapes


def gemm_shapes(arch, tp=1, seq_len=2048, micro_batch=1, cp=1, ep=1, etp=1, dense_layers=None, moe_layers=None):
    """The GEMM shapes of one rank for `arch` (gpuplan.model(...)["architecture"]), one entry per distinct GEMM.

    dense_layers / moe_layers: the layer counts (gpuplan.model's params.dense_layers / moe_layers); by default
    every layer is dense, or MoE when the architecture has experts.
    """
    if min(tp, seq_len, micro_batch, cp, ep, etp) < 1:
        raise ValueError("tp, seq_len, micro_batch, cp, ep and etp must be at least 1")
    hidden, layers = arch["hidden"], arch["layers"]
    tokens = micro_batch * _divide(seq_len, cp, "seq_len")
    if dense_layers is None:
        dense_layers = 0 if arch.get("moe") else layers
    if moe_layers is None:
        moe_layers = layers - dense_layers if arch.get("moe") else 0
    attention_out = _divide(arch["heads"] * _v_head_dim(arch), tp, "attention output inputs")
    shapes = [GemmShape("qkv", tokens, _divide(_attention_outputs(arch), tp, "qkv outputs"), hidden, 1, layers),
              GemmShape("attention_out", tokens, hidden, attention_out, 1, layers)]
    up = 2 if arch.get("mlp") == "gated" else 1
    if dense_layers:
        shapes += _mlp_shapes("mlp", tokens, hidden, arch["ffn_hidden"], up, tp, dense_layers)
    if moe_layers:
        shapes += _moe_shapes(arch, tokens, tp, ep, etp, moe_layers)
    shapes.append(GemmShape("logits", tokens, -(-arch["vocab"] // tp), hidden, 1, 1))
    return shapes


def parse_shapes(text):
    """--shapes "M,N,K;M,N,K,E": explicit shapes; a fourth number makes a grouped GEMM of E experts."""
    shapes = []
    for i, item in enumerate(part for part in text.replace(" ", "").split(";") if part):
        numbers = item.split(",")
        try:
            values = [int(v) for v in numbers]
        except ValueError:
            values = []
        if len(values) not in (3, 4) or min(values) < 1:
            raise ValueError(f"--shapes: '{item}' (accepted: M,N,K or M,N,K,EXPERTS, positive integers, "
                             "shapes separated by ';')")
        shapes.append(GemmShape(f"shape{i}", values[0], values[1], values[2], values[3] if len(values) == 4 else 1))
    if not shapes:
        raise ValueError(f"--shapes: '{text}' (accepted: M,N,K;M,N,K;... )")
    return shapes
