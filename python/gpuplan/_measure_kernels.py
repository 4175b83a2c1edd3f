"""Timing of GEMMs and attention with PyTorch on one device (CUDA events on a GPU, the wall clock on the CPU).

Every timing: `warmup` untimed runs, then `repeats` timed batches of `iters` runs each; the result is the median
batch's time per run. PyTorch is imported by the caller (measure.py) and passed in.
"""
import statistics
import time

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def seconds_per_run(torch, device, run, warmup, iters, repeats):
    """Median over `repeats` batches of the time of one call of `run()`."""
    for _ in range(warmup):
        run()
    cuda = device.type == "cuda"
    batches = []
    for _ in range(repeats):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(device)
            start.record()
            for _ in range(iters):
                run()
            end.record()
            end.synchronize()
            batches.append(start.elapsed_time(end) / 1e3 / iters)
        else:
            begin = time.perf_counter()
            for _ in range(iters):
                run()
            batches.append((time.perf_counter() - begin) / iters)
    return statistics.median(batches)


def time_linear(torch, device, dtype, shape, timing):
    """The forward, input-gradient and weight-gradient GEMMs of one linear layer as nn.Linear runs them:
    y = x @ W^T, dx = dy @ W, dW = dy^T @ x (grouped: one batched matmul over the experts). Seconds each."""
    m, n, k, e = shape.rows, shape.outputs, shape.inputs, shape.batch
    lead = (e,) if e > 1 else ()
    x = torch.randn(*lead, m, k, device=device, dtype=dtype)
    w = torch.randn(*lead, n, k, device=device, dtype=dtype)
    dy = torch.randn(*lead, m, n, device=device, dtype=dtype)
    w_t, dy_t = w.transpose(-1, -2), dy.transpose(-1, -2)
    runs = {"forward": lambda: torch.matmul(x, w_t),
            "dgrad": lambda: torch.matmul(dy, w),
            "wgrad": lambda: torch.matmul(dy_t, x)}
    return {name: seconds_per_run(torch, device, run, *timing) for name, run in runs.items()}


def attention_flops(batch, heads, seq_len, head_dim):
    """Causal attention forward FLOPs: QK^T and PV, 2 x s x s x d each per head, half of the scores kept."""
    return 0.5 * 4 * batch * heads * seq_len * seq_len * head_dim


def _eager_causal_attention(torch):
    """Causal attention from matmul and softmax, for PyTorch before 2.0 (no scaled_dot_product_attention)."""
    def attention(q, k, v, is_causal=True):
        scores = torch.matmul(q, k.transpose(-1, -2)) * q.shape[-1] ** -0.5
        s = q.shape[-2]
        mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        return torch.matmul(torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1), v)
    return attention


def attention_kernel(torch):
    """The attention function timed and its name: PyTorch's fused SDPA, or the eager fallback."""
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is not None:
        return sdpa, "torch.nn.functional.scaled_dot_product_attention (causal)"
    return _eager_causal_attention(torch), "eager causal attention (matmul, softmax, matmul; torch < 2.0 has no SDPA)"


def time_attention(torch, device, dtype, batch, heads, seq_len, head_dim, timing):
    """Causal attention (attention_kernel): forward seconds and backward seconds (forward and backward timed
    together, minus the forward)."""
    sdpa, _ = attention_kernel(torch)
    q, k, v = (torch.randn(batch, heads, seq_len, head_dim, device=device, dtype=dtype, requires_grad=True)
               for _ in range(3))
    grad = torch.randn(batch, heads, seq_len, head_dim, device=device, dtype=dtype)

    def forward():
        with torch.no_grad():
            sdpa(q, k, v, is_causal=True)

    def forward_backward():
        out = sdpa(q, k, v, is_causal=True)
        torch.autograd.backward(out, grad, inputs=[q, k, v])

    fwd = seconds_per_run(torch, device, forward, *timing)
    both = seconds_per_run(torch, device, forward_backward, *timing)
    return fwd, max(both - fwd, 0.0)
