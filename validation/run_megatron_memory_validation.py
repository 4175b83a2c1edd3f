#!/usr/bin/python3
"""Validate `gpuplan memory --impl megatron` against real Megatron-LM + Transformer Engine runs.

The runs (validation/data/b200-megatron-llama3-70b.json, from MooreThreads/SimuMax, Apache-2.0): Llama-3-70B cut
to 12 layers on one 8x B200 node, per-rank torch.cuda.max_memory_allocated and max_memory_reserved. For each run
and pipeline stage the report lists the measured and estimated allocated peak, the reserved peak, the errors, and
SimuMax's allocated error beside them; then gpuplan's terms against SimuMax's breakdown where the file has one.

Usage:
  validation/run_megatron_memory_validation.py --gpuplan ./build/gpuplan --out validation/megatron_memory_report.md
  validation/run_megatron_memory_validation.py --gpuplan ./build/gpuplan --check validation/megatron_memory_report.md
--check writes nothing: it fails when the report it would write differs from the file, or when an allocated peak
is off by more than 1 % or a reserved peak by more than 3 %.
"""
import argparse
import json
import os
import subprocess
import sys

import b200_further_runs

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, 'data', 'b200-megatron-llama3-70b.json')
MIB = 2 ** 20
GIB = 2 ** 30
ALLOCATED_TOLERANCE = 0.01
RESERVED_TOLERANCE = 0.03


def gpuplan_memory(gpuplan, run):
    """gpuplan's per-stage memory for one run, with the run's exact settings."""
    cmd = [gpuplan, 'memory', '--model', 'llama-3.1-70b', '--layers', str(run['layers']), '--gpu', 'b200',
           '--gpus', str(run['gpus']), '--tp', str(run['tp']), '--pp', str(run['pp']), '--cp', str(run['cp']),
           '--seq-len', str(run['seq']), '--micro-batch', str(run['mbs']),
           '--global-batch', str(run['global_batch']), '--zero', '1', '--loss', 'fused-te',
           '--all-stages', '--json']
    if run['sp']:
        cmd.append('--sequence-parallel')
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out), ' '.join(['gpuplan'] + cmd[1:])


def measured_stages(run):
    """Per pipeline stage, the largest allocated and reserved peak (MiB) over the stage's ranks."""
    ranks = run['measured']['peak_memory_by_rank_mib']
    per_stage = run['gpus'] // run['pp']
    stages = []
    for stage in range(run['pp']):
        members = [ranks[str(r)] for r in range(stage * per_stage, (stage + 1) * per_stage)]
        stages.append((max(m['max_allocated'] for m in members), max(m['max_reserved'] for m in members)))
    return stages


def simumax_stage(run, stage):
    peaks = run['simumax'].get('peak_alloc_by_stage_gib')
    if peaks:
        return peaks['first_stage' if stage == 0 else 'last_stage'] * GIB / MIB
    return run['simumax']['perf_alloc_gib'] * GIB / MIB


def error(estimate, measured):
    return (estimate - measured) / measured


def stage_rows(runs, gpuplan):
    rows, commands = [], []
    for run in runs:
        result, command = gpuplan_memory(gpuplan, run)
        commands.append(command)
        for stage, (alloc, reserved) in enumerate(measured_stages(run)):
            est = result['stages'][stage]
            rows.append({'case': run['case'], 'stage': stage, 'alloc': alloc, 'reserved': reserved,
                         'est_alloc': est['allocated_peak'] / MIB, 'est_reserved': est['reserved_peak'] / MIB,
                         'simumax': simumax_stage(run, stage), 'memory_source': run['measured']['memory_source_case'],
                         'terms': est})
    return rows, commands


def table(rows):
    lines = ['| run | stage | measured allocated MiB | gpuplan | error | SimuMax error | measured reserved MiB '
             '| gpuplan | error |', '|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        shared = '' if r['memory_source'] == r['case'] else ' (memory of the mbc4 run)'
        lines.append(f"| {r['case']}{shared} | {r['stage']} | {r['alloc']:.1f} | {r['est_alloc']:.1f} | "
                     f"{100 * error(r['est_alloc'], r['alloc']):+.2f} % | {100 * error(r['simumax'], r['alloc']):+.2f} % | "
                     f"{r['reserved']:.0f} | {r['est_reserved']:.0f} | "
                     f"{100 * error(r['est_reserved'], r['reserved']):+.2f} % |")
    return lines


def summary(rows):
    distinct = {(r['memory_source'], r['stage']): r for r in rows}.values()
    def stats(key, measured):
        errors = [error(r[key], r[measured]) for r in distinct]
        return (100 * max(abs(e) for e in errors), 100 * sum(abs(e) for e in errors) / len(errors),
                100 * sum(errors) / len(errors))
    lines = ['', f'Over the {len(distinct)} distinct measured stages (the mbc8 and mbc32 runs reuse the mbc4 '
             'runs\' memory):', '', '| figure | max abs error | MAPE | bias |', '|---|---|---|---|']
    for name, key, measured in (('allocated, gpuplan', 'est_alloc', 'alloc'), ('allocated, SimuMax', 'simumax', 'alloc'),
                                ('reserved, gpuplan', 'est_reserved', 'reserved')):
        worst, mape, bias = stats(key, measured)
        lines.append(f'| {name} | {worst:.2f} % | {mape:.2f} % | {bias:+.2f} % |')
    return lines


def breakdown(runs, rows):
    """gpuplan's components beside SimuMax's replay breakdown (GiB)."""
    lines = ['', '## Term by term against SimuMax (GiB)', '',
             'SimuMax splits a stage into model states, TE\'s dummy weight-gradient buffers and activations; '
             'gpuplan\'s activations here are its stored activations, logits, communication buffers and the backward '
             'transient (allocated peak less model states and weight-gradient buffers).', '',
             '| run | stage | states gpuplan | SimuMax | wgrad buffers gpuplan | SimuMax | rest gpuplan | SimuMax |',
             '|---|---|---|---|---|---|---|---|']
    by_case = {(r['case'], r['stage']): r for r in rows}
    for run in runs:
        parts = run['simumax'].get('replay_breakdown_gib')
        if not parts or run['measured']['memory_source_case'] != run['case']:
            continue
        for stage, key in enumerate(['first_stage', 'last_stage'][:run['pp']]):
            part = parts.get(key)
            est = by_case[(run['case'], stage)]['terms']
            states = (est['weights'] + est['master_weights'] + est['gradients'] + est['optimizer_states']) / GIB
            wgrad = est['wgrad_buffers'] / GIB
            rest = est['allocated_peak'] / GIB - states - wgrad
            simu_rest = part['peak_alloc'] - part['model_states'] - part['te_dummy_wgrad']
            lines.append(f"| {run['case']} | {stage} | {states:.4f} | {part['model_states']:.4f} | {wgrad:.4f} | "
                         f"{part['te_dummy_wgrad']:.4f} | {rest:.4f} | {simu_rest:.4f} |")
    return lines


def step_times(runs, gpuplan):
    """The same runs' measured iteration time against `gpuplan estimate` (B200 GEMMs from data/gemm/)."""
    lines = ['', '## Step time of the same runs (ms)', '',
             '| run | measured | gpuplan | error | SimuMax | error |', '|---|---|---|---|---|---|']
    errors, simumax_errors = [], []
    for run in runs:
        cmd = [gpuplan, 'estimate', '--model', 'llama-3.1-70b', '--layers', str(run['layers']), '--system',
               run['system'], '--nodes', '1', '--tp', str(run['tp']), '--pp', str(run['pp']), '--seq-len',
               str(run['seq']), '--global-batch', str(run['global_batch']), '--zero', '1', '--loss', 'fused-te',
               # The settings: no --overlap-grad-reduce (Megatron's default), the gradient reduction after the backward.
               '--no-dp-overlap', '--json'] + (['--sequence-parallel'] if run['sp'] else [])
        estimate = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        measured, simumax = run['measured']['real_ms'], run['simumax']['perf_ms']
        ours = 1000 * estimate['time']['step_s']
        errors.append(error(ours, measured))
        simumax_errors.append(error(simumax, measured))
        lines.append(f"| {run['case']} | {measured:.1f} | {ours:.1f} | {100 * errors[-1]:+.1f} % | {simumax:.1f} | "
                     f"{100 * simumax_errors[-1]:+.1f} % |")
    def mape(values):
        return 100 * sum(abs(v) for v in values) / len(values)
    lines += ['', f'MAPE {mape(errors):.1f} % (bias {100 * sum(errors) / len(errors):+.1f} %); SimuMax MAPE '
              f'{mape(simumax_errors):.1f} %.']
    return lines


def report(gpuplan):
    with open(DATA) as f:
        data = json.load(f)
    rows, commands = stage_rows(data['runs'], gpuplan)
    lines = ['# Megatron-LM + Transformer Engine on B200: gpuplan against measured runs', '',
             'Generated by `validation/run_megatron_memory_validation.py`; do not edit. Data: '
             f"`validation/data/b200-megatron-llama3-70b.json` ({data['source']['repo']} "
             f"{data['source']['path']} at {data['source']['commit'][:12]}).", '',
             f"Settings: {data['settings']}", '',
             'Measured figures are the largest over the stage\'s ranks. gpuplan\'s allocated peak is its stage total '
             'less the CUDA context, NCCL buffers and the allocator reserve; its reserved peak adds the reserve, '
             'replayed: PyTorch\'s caching-allocator rules run over Megatron-Core and Transformer Engine\'s '
             'allocations of the stage, for up to 8 ranks of the optimizer shard group (src/memory/megatron_replay.hpp; '
             'layouts the replay does not cover keep data/overheads.json allocator_reserve_factor).', '']
    lines += table(rows) + summary(rows) + breakdown(data['runs'], rows)
    lines += step_times(data['runs'], gpuplan)
    lines += b200_further_runs.sections(gpuplan)
    lines += ['', '## Commands', ''] + [f'    {c}' for c in commands]
    bad = [(r, 'allocated', r['est_alloc'], r['alloc'], ALLOCATED_TOLERANCE) for r in rows
           if abs(error(r['est_alloc'], r['alloc'])) > ALLOCATED_TOLERANCE]
    bad += [(r, 'reserved', r['est_reserved'], r['reserved'], RESERVED_TOLERANCE) for r in rows
            if abs(error(r['est_reserved'], r['reserved'])) > RESERVED_TOLERANCE]
    return '\n'.join(lines) + '\n', bad


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--gpuplan', required=True)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument('--out', help='write the report here')
    target.add_argument('--check', help='compare with this report; write nothing')
    args = parser.parse_args()
    text, bad = report(args.gpuplan)
    for r, figure, estimate, measured, tolerance in bad:
        print(f"{figure} peak of {r['case']} stage {r['stage']}: {estimate:.1f} MiB against {measured:.1f} measured, "
              f"more than {100 * tolerance:.0f} % off", file=sys.stderr)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(text)
        print(f'wrote {args.out}')
    else:
        with open(args.check) as f:
            if f.read() != text:
                print(f'{args.check} is out of date: run with --out {args.check} and review the difference',
                      file=sys.stderr)
                return 1
        print(f'{args.check} matches')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
