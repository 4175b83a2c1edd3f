#!/usr/bin/python3
"""Writes data/gemm/<gpu>-bf16.json from a SimuMax system file's measured GEMM efficiencies.

    scripts/convert_simumax_gemm_table.py SYSTEM.json GPU SOURCE > data/gemm/GPU-bf16.json

SimuMax (MooreThreads/SimuMax, Apache-2.0) measures each GEMM of a linear layer separately: the forward (TN), the
input gradient (NN) and the weight gradient accumulated into an fp32 main_grad (NT). This keys all three by the
layer's forward shape (rows = tokens, outputs, inputs), as src/perf/gemm_table.cpp looks them up; grouped GEMMs
(MoE experts) likewise by rows per expert, outputs and inputs. Flash-attention entries (sdp_fwd, sdp_bwd, where the
file has them) are keyed by the heads one kernel call sees, its keys (the sequence), and the query/key and value
head dims; their efficiencies stay in SimuMax's convention (the FLOPs of the full, unmasked s x s products over the
time of the causal kernel: SimuMax's CoreAttention counts 2 x 2 b h d s^2 forward and 5 x 2 b h d s^2 backward), so
entries above 1 are possible (src/perf/layer_cost.cpp converts).

The shipped tables and their inputs:
    data/gemm/b200-bf16.json            SimuMax configs/system/b200_bf16_ceperm.json
    data/gemm/a100-pcie-80gb-bf16.json  tests/data/measured/a100-pcie-simumax-gemm.json (the GEMM sections of
                                        SimuMax configs/system/a100_pcie.json, same layout)
"""
import json
import sys


def fields(key):
    return dict(part.split('=', 1) for part in key.split(', '))


def dense_entries(table):
    shapes = {}
    for key, efficiency in table.items():
        f = fields(key)
        m, n, k = int(f['m']), int(f['n']), int(f['k'])
        if f['layout'] == 'TN' and f['accumulate'] == 'False':
            shapes.setdefault((m, n, k), {})['forward'] = efficiency        # rows, outputs, inputs
        elif f['layout'] == 'NN' and f['accumulate'] == 'False':
            shapes.setdefault((m, k, n), {})['dgrad'] = efficiency          # m rows, k outputs, n inputs
        elif f['layout'] == 'NT' and f['accumulate'] == 'True' and f['out_dtype'] == 'fp32':
            shapes.setdefault((k, m, n), {})['wgrad'] = efficiency          # k rows, m outputs, n inputs
    return [[*shape, round(e['forward'], 4), round(e['dgrad'], 4), round(e['wgrad'], 4)]
            for shape, e in sorted(shapes.items()) if len(e) == 3]


def grouped_entries(table):
    """Per expert shape: the weight gradient as measured into an fp32 main_grad, which Megatron-LM's weight-gradient
    GEMM accumulates into (gradient-accumulation fusion; the file also times it into a bf16 main_grad, which runs
    faster); the forward and input gradient, which do not touch the main_grad, as the mean of every timing of them
    (the file times each once per main_grad dtype)."""
    timings = {}
    roles = {'fwd': 'forward', 'bwd_grad_act': 'dgrad', 'bwd_grad_w': 'wgrad'}
    for key, efficiency in table.items():
        f = fields(key)
        role = roles[f['stage']]
        if role == 'wgrad' and f.get('main_grad_dtype', 'fp32') != 'fp32':
            continue
        timings.setdefault((int(f['M']), int(f['N']), int(f['K'])), {}).setdefault(role, []).append(efficiency)
    return [[*shape, *(round(sum(e[role]) / len(e[role]), 4) for role in ('forward', 'dgrad', 'wgrad'))]
            for shape, e in sorted(timings.items()) if len(e) == 3]


def attention_entries(ops):
    """[heads, keys, qk head dim, v head dim, forward, backward] per measured shape with a contiguous q/k/v."""
    if 'sdp_fwd' not in ops or 'sdp_bwd' not in ops:
        return []
    backward = ops['sdp_bwd']['accurate_efficient_factor']
    out = []
    for key, efficiency in ops['sdp_fwd']['accurate_efficient_factor'].items():
        f = fields(key)
        if f['qkv_contiguous'] != 'True' or f['batch'] != '1' or key not in backward:
            continue
        out.append([int(f['head_num']), int(f['seq_len']), int(f['qk_head_dim']), int(f['v_head_dim']),
                    round(efficiency, 4), round(backward[key], 4)])
    # One entry per (heads, keys, head dims): the first measured (GQA variants of one shape differ by < 2 %).
    unique = {}
    for e in out:
        unique.setdefault(tuple(e[:4]), e)
    return sorted(unique.values())


def main():
    system, gpu, source = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(system) as f:
        ops = json.load(f)['accelerator']['op']
    out = {
        '_about': 'Measured bf16 GEMM efficiency (fraction of the dense peak) of one GPU by linear-layer shape: '
                  'each entry is [rows, outputs, inputs, forward, input gradient, weight gradient into fp32 '
                  'main_grad]; grouped entries are per expert of a grouped GEMM. Written by '
                  'scripts/convert_simumax_gemm_table.py.',
        'gpu': gpu,
        'source': source,
        'dense': dense_entries(ops['matmul']['accurate_efficient_factor']),
        'grouped': grouped_entries(ops['group_matmul']['accurate_efficient_factor']),
    }
    attention = attention_entries(ops)
    if attention:
        out['attention_about'] = ('Flash attention (Transformer Engine, causal mask) of one kernel call: each entry is '
                                  '[heads, keys, qk head dim, v head dim, forward, backward], the efficiency as '
                                  'SimuMax measures it: the full s x s FLOPs (forward 4 b h d s^2, backward 10 b h d s^2 '
                                  'for d = qk = v head dim) over time and peak, so twice the fraction of the peak the '
                                  'causal kernel reaches. Source: the source file\'s sdp_fwd and sdp_bwd accurate_efficient_factor '
                                  'entries (batch 1, qkv_contiguous=True).')
        out['attention'] = attention
    text = json.dumps(out, indent=1)
    # One entry per line keeps the file readable and its diffs small.
    for key in ('dense', 'grouped', 'attention'):
        for entry in out.get(key, []):
            text = text.replace(json.dumps(entry, indent=1).replace('\n', '\n  '), json.dumps(entry), 1)
    print(text)


if __name__ == '__main__':
    main()
