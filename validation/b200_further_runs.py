"""The further B200 runs (validation/data/b200-simumax-further-runs.json): the Llama-3 405B shape, DeepSeek-V2/V3
MoE and context-parallel runs, per pipeline stage against `gpuplan memory`, and their iteration times against
`gpuplan estimate`. Imported by run_megatron_memory_validation.py; reported beside the 12 Llama-3-70B runs, without
their 1 % gate."""
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, 'data', 'b200-simumax-further-runs.json')
MODELS = os.path.join(HERE, 'data', 'models')
MIB = 2 ** 20
GIB = 2 ** 30
MODEL_FLAGS = {
    'llama3-70b': lambda run: ['--model', 'llama-3.1-70b', '--layers', str(run['layers'])],
    'llama3-405b': lambda run: ['--model', os.path.join(MODELS, 'llama3-405b-l4-kv16.json')],
    'deepseekv2': lambda run: ['--model', os.path.join(MODELS, 'deepseek-v2-l4.json')],
    'deepseekv3': lambda run: ['--model', os.path.join(MODELS, 'deepseek-v3-l4.json')],
}


def flags(run, global_batch):
    """The run's settings as gpuplan options (the file's `settings` says what they were)."""
    out = MODEL_FLAGS[run['model']](run) + [
        '--tp', str(run['tp']), '--pp', str(run['pp']), '--cp', str(run['cp']), '--seq-len', str(run['seq']),
        '--micro-batch', str(run['mbs']), '--global-batch', str(global_batch), '--zero', '1', '--loss', 'fused-te']
    if run['cp'] > 1:
        out += ['--cp-comm-type', run['cp_comm_type']]
    if run['ep'] > 1:
        out += ['--ep', str(run['ep']), '--moe-capacity-factor', str(run['moe_capacity_factor'])]
        if run['moe_pad_to_capacity']:
            out.append('--moe-pad-to-capacity')
    if run['sp']:
        out.append('--sequence-parallel')
    return out


def error(estimate, measured):
    return (estimate - measured) / measured


def replayed(stage):
    """Whether gpuplan replayed the caching allocator for this stage, or kept allocator_reserve_factor."""
    return any(t['name'].endswith(', replayed') for t in stage.get('terms', []))


def memory_rows(gpuplan, runs):
    rows = []
    for run in runs:
        batch = run['iterations'][0]['mbc'] * run['dp']
        cmd = [gpuplan, 'memory', '--gpu', 'b200', '--gpus', '8', '--all-stages', '--json'] + flags(run, batch)
        result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        for stage, measured in sorted(run['measured_per_stage_mib'].items()):
            est = result['stages'][int(stage)]
            rows.append({'case': run['case'], 'stage': int(stage), 'alloc': measured['max_allocated'],
                         'reserved': measured['max_reserved'], 'est_alloc': est['allocated_peak'] / MIB,
                         'est_reserved': est['reserved_peak'] / MIB, 'replayed': replayed(est)})
    return rows


def memory_section(gpuplan, runs):
    rows = memory_rows(gpuplan, runs)
    lines = ['', '## Further runs: the 405B shape, MoE and context parallelism', '',
             'Data: `validation/data/b200-simumax-further-runs.json`. Measured MiB, the largest over the stage\'s ranks.',
             'Reserve: `replayed` where gpuplan replays the caching allocator (dense layers without context '
             'parallelism), `factor` where it keeps allocator_reserve_factor.',
             '', '| run | stage | measured allocated | gpuplan | error | measured reserved | gpuplan | error | reserve |',
             '|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        lines.append(f"| {r['case']} | {r['stage']} | {r['alloc']:.1f} | {r['est_alloc']:.1f} | "
                     f"{100 * error(r['est_alloc'], r['alloc']):+.2f} % | {r['reserved']:.0f} | {r['est_reserved']:.0f} | "
                     f"{100 * error(r['est_reserved'], r['reserved']):+.2f} % | "
                     f"{'replayed' if r['replayed'] else 'factor'} |")
    for name, key, measured in (('allocated', 'est_alloc', 'alloc'), ('reserved', 'est_reserved', 'reserved')):
        errors = [error(r[key], r[measured]) for r in rows]
        lines.append(f'\n{name}: max abs error {100 * max(abs(e) for e in errors):.2f} %, MAPE '
                     f'{100 * sum(abs(e) for e in errors) / len(errors):.2f} %, bias '
                     f'{100 * sum(errors) / len(errors):+.2f} % over {len(rows)} stages.')
    return lines


def time_section(gpuplan, runs):
    lines = ['', '## Step time of the further runs (ms)', '',
             '| run | micro-batches | measured | gpuplan | error | SimuMax | error |', '|---|---|---|---|---|---|---|']
    errors, simumax = [], []
    for run in runs:
        for it in run['iterations']:
            # The settings: no --overlap-grad-reduce (Megatron's default), the gradient reduction after the backward.
            cmd = [gpuplan, 'estimate', '--system', 'dgx-b200', '--nodes', '1', '--no-dp-overlap', '--json'] + \
                flags(run, it['mbc'] * run['dp'])
            step = 1000 * json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)['time']['step_s']
            errors.append(error(step, it['real_ms']))
            simumax.append(error(it['simumax_ms'], it['real_ms']))
            lines.append(f"| {run['case']} | {it['mbc']} | {it['real_ms']:.1f} | {step:.1f} | {100 * errors[-1]:+.1f} % | "
                         f"{it['simumax_ms']:.1f} | {100 * simumax[-1]:+.1f} % |")
    def mape(values):
        return 100 * sum(abs(v) for v in values) / len(values)
    lines += ['', f'MAPE {mape(errors):.1f} % (bias {100 * sum(errors) / len(errors):+.1f} %); SimuMax MAPE '
              f'{mape(simumax):.1f} % (bias {100 * sum(simumax) / len(simumax):+.1f} %), over {len(errors)} runs.']
    return lines


def sections(gpuplan):
    with open(DATA) as f:
        runs = json.load(f)['runs']
    return memory_section(gpuplan, runs) + time_section(gpuplan, runs)
