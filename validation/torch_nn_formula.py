#!/usr/bin/python3
"""Closed-form saved-for-backward bytes of the torch-nn GPT (see docs/activations-torch-nn.md).

Reference implementation of the per-tensor table in docs/activations-torch-nn.md, for PyTorch 1.13.1 on CPU.
Returns a dict of named terms (bytes); their sum equals what torch_gpt_saved_bytes.py measures.
"""


def saved_bytes_terms(L, h, a, V, S, b, p, recompute, autocast='fp32'):
    s = S
    c = 2 if autocast == 'bf16' else 4     # bytes of matmul-side tensors (bf16 under autocast)
    bf16 = autocast == 'bf16'
    drop = p > 0.0
    bsh, bs, ass = b * s * h, b * s, b * a * s * s
    t = {}
    # embeddings
    t['token ids (embedding indices, also the loss target)'] = 8 * bs
    t['position ids (arange)'] = 8 * s
    t['embedding dropout mask (fp32)'] = 4 * bsh if drop else 0
    # transformer layers
    if recompute:
        t['checkpoint inputs (layer input x, fp32)'] = L * 4 * bsh
    else:
        per = {
            'ln1 input x (fp32)': 4 * bsh,
            'ln1 mean+rstd (fp32)': 8 * bs,
            'in_proj input': c * bsh,
            'in_proj weight cast (bf16)': 2 * 3 * h * h if bf16 else 0,
            '1/sqrt(head_dim) scalar (float64)': 8,
            'q scaled': c * bsh,
            # k and v are copies (k.contiguous()) of chunks of the in_proj output, except when b*s == 1:
            # then the chunks are already contiguous and k, v stay views of the whole (b*s, 3h) output.
            'k': c * bsh if bs > 1 else 0,
            'softmax output': c * ass,
            'attention dropout mask': c * ass if drop else 0,
            'attention dropout output': c * ass if drop else 0,
            'v': c * bsh if bs > 1 else 0,
            'in_proj output (k, v views; only when b*s == 1)': 3 * c * bsh if bs == 1 else 0,
            'out_proj input': c * bsh,
            'out_proj weight cast (bf16)': 2 * h * h if bf16 else 0,
            'dropout1 mask': c * bsh if drop else 0,
            'ln2 input (fp32)': 4 * bsh,
            'ln2 mean+rstd (fp32)': 8 * bs,
            'linear1 input': c * bsh,
            'linear1 weight cast (bf16)': 2 * 4 * h * h if bf16 else 0,
            'gelu input': 4 * c * bsh,
            'mlp dropout mask': 4 * c * bsh if drop else 0,
            'linear2 input': 4 * c * bsh,
            'linear2 weight cast (bf16)': 2 * 4 * h * h if bf16 else 0,
            'dropout2 mask': c * bsh if drop else 0,
        }
        for k, v in per.items():
            t['layer: ' + k] = L * v
    # output
    t['final ln input (fp32)'] = 4 * bsh
    t['final ln mean+rstd (fp32)'] = 8 * bs
    t['head input'] = c * bsh
    t['head (tied) weight cast (bf16)'] = 2 * V * h if bf16 else 0
    t['log_softmax output (fp32)'] = 4 * bs * V
    t['nll_loss total_weight (fp32 scalar)'] = 4
    return t


def saved_bytes(*args, **kw):
    return sum(saved_bytes_terms(*args, **kw).values())
