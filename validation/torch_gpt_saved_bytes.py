#!/usr/bin/python3
"""Independent oracle: bytes that a real PyTorch training step saves for backward.

Model: GPT-2-shaped stack built from PyTorch's own nn.TransformerEncoderLayer (pre-norm, GELU, 4h MLP,
causal mask), learned token+position embeddings, final LayerNorm, head tied to the token embedding,
cross-entropy loss. Counts unique storages packed by autograd during forward (parameters excluded),
optionally with per-layer torch.utils.checkpoint. Prints one JSON object per configuration.

Extension: an optional config key "autocast" ("bf16" or "fp32", default "fp32"). With "bf16" the forward pass
and the loss run under torch.autocast('cpu', dtype=torch.bfloat16); everything else is unchanged.
"""
import contextlib, json, sys, torch, torch.nn as nn
import torch.utils.checkpoint as ckpt

class GPT(nn.Module):
    def __init__(s, L, h, a, V, S, p):
        super().__init__()
        s.tok = nn.Embedding(V, h); s.pos = nn.Embedding(S, h); s.drop = nn.Dropout(p)
        s.layers = nn.ModuleList(nn.TransformerEncoderLayer(h, a, 4 * h, p, activation='gelu',
                                 batch_first=True, norm_first=True) for _ in range(L))
        s.ln = nn.LayerNorm(h); s.head = nn.Linear(h, V, bias=False); s.head.weight = s.tok.weight
        s.register_buffer('mask', torch.triu(torch.full((S, S), float('-inf')), 1))
    def forward(s, idx, recompute):
        b, t = idx.shape
        x = s.drop(s.tok(idx) + s.pos(torch.arange(t)))
        for l in s.layers:
            if recompute: x = ckpt.checkpoint(l, x, s.mask[:t, :t])
            else: x = l(x, src_mask=s.mask[:t, :t])
        return s.head(s.ln(x))

def measure(L, h, a, V, S, b, p, recompute, seed=0, autocast='fp32'):
    torch.manual_seed(seed)
    m = GPT(L, h, a, V, S, p).train()
    params = {q.data_ptr() for q in m.parameters()} | {q.data_ptr() for q in m.buffers()}
    seen = {}
    def pack(t):
        st = t.untyped_storage() if hasattr(t, 'untyped_storage') else t.storage()
        ptr = st.data_ptr()
        if ptr not in params and ptr not in seen:
            seen[ptr] = st.nbytes()
        return t
    idx = torch.randint(0, V, (b, S))
    amp = (torch.autocast('cpu', dtype=torch.bfloat16) if autocast == 'bf16' else contextlib.nullcontext())
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), amp:
        logits = m(idx, recompute)
        loss = nn.functional.cross_entropy(logits.view(-1, V), idx.view(-1))
    saved = sum(seen.values())
    loss.backward()
    return saved

if __name__ == '__main__':
    for line in sys.stdin:
        if not line.strip(): continue
        c = json.loads(line)
        c['saved_bytes'] = measure(c['layers'], c['hidden'], c['heads'], c['vocab'], c['seq'], c['batch'],
                                   c['dropout'], c['recompute'], autocast=c.get('autocast', 'fp32'))
        print(json.dumps(c), flush=True)
