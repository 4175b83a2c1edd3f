#!/usr/bin/python3
"""Validate `gpuplan memory` against real PyTorch measurements (CPU, PyTorch 1.13).

Parts:
  a) activations: bytes saved for backward by the torch-nn GPT (torch_gpt_saved_bytes.py), fp32 and bf16
     autocast, recompute none/full, dropout 0/0.1, against per_gpu.activations + per_gpu.logits of
     `gpuplan memory --impl torch-nn` (pass within 2%);
  b) model states: parameters, gradients and optimizer state after 2 real steps of Adam, AdamW and SGD with
     momentum, against per_gpu.weights / gradients / optimizer_states of `gpuplan memory --params N`
     (exact match; torch's per-parameter Adam `step` scalars are reported and excluded, see README.md);
  c) ZeRO-1: torch.distributed.optim.ZeroRedundancyOptimizer (Adam) over 2 and 4 gloo processes, per-rank
     optimizer state against per_gpu.optimizer_states of `gpuplan memory --zero 1 --dp R`.

Usage: /usr/bin/python3 validation/run_torch_validation.py --gpuplan ./build/gpuplan --out validation/torch_report.md
Exits non-zero when any check fails; the last line printed is `N passed, M failed`.
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep validation/ free of __pycache__
HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, 'torch_gpt_saved_bytes.py')
sys.path.insert(0, HERE)

ACT_TOLERANCE = 0.02

# ---------------------------------------------------------------------------------------------- helpers


class Check:
    def __init__(self, part, config, measured, estimated, ok, error=None, note=''):
        self.part, self.config, self.measured, self.estimated = part, config, measured, estimated
        self.ok, self.error, self.note = ok, error, note


def rel_err(measured, estimated):
    if measured is None or estimated is None:
        return None
    if measured == 0:
        return 0.0 if estimated == 0 else float('inf')
    return (estimated - measured) / measured


class Gpuplan:
    """Runs `gpuplan memory ... --json` and extracts per_gpu values (bytes)."""

    def __init__(self, path):
        self.path = path
        self.problem = None
        if not path or not os.path.exists(path):
            self.problem = f'gpuplan binary not found at {path!r} (build it first: make build)'
        elif not os.access(path, os.X_OK):
            self.problem = f'gpuplan binary {path!r} is not executable'

    def memory(self, args):
        """Returns (per_gpu dict, None) or (None, error message)."""
        if self.problem:
            return None, self.problem
        cmd = [self.path, 'memory'] + [str(a) for a in args]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f'could not run {" ".join(cmd)}: {e}'
        if r.returncode != 0:
            msg = (r.stderr.strip() or r.stdout.strip()).splitlines()
            last = msg[-1] if msg else '(no output)'
            return None, f'exit {r.returncode}: ' + (last if len(last) <= 160 else last[:157] + '...')
        try:
            doc = json.loads(r.stdout)
        except json.JSONDecodeError as e:
            return None, f'output is not JSON ({e}): {r.stdout[:200]!r}'
        per = doc.get('per_gpu') if isinstance(doc, dict) else None
        if not isinstance(per, dict):
            return None, 'JSON has no "per_gpu" object'
        return per, None

    @staticmethod
    def value(per, key):
        """per_gpu[key] as bytes: a number, or an object with a "bytes" member."""
        v = per.get(key)
        if isinstance(v, dict):
            v = v.get('bytes')
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise KeyError(f'per_gpu.{key} missing or not a number of bytes')
        return v


def fmt_bytes(v):
    if v is None:
        return '—'
    if isinstance(v, float) and not v.is_integer():
        return f'{v:,.1f}'
    return f'{int(v):,}'


def fmt_err(e):
    if e is None:
        return '—'
    if e == float('inf'):
        return 'inf'
    return f'{100 * e:+.3f}%'


# ------------------------------------------------------------------------------------ a) activations

def activation_grid():
    """40 configurations: 8 modes x 5 shapes, the shapes rotating so every mode sees different ones."""
    shapes = [  # L, h, a, V, S, b
        dict(layers=2, hidden=64, heads=4, vocab=512, seq=32, batch=2),
        dict(layers=1, hidden=96, heads=3, vocab=1000, seq=48, batch=1),
        dict(layers=3, hidden=48, heads=6, vocab=257, seq=64, batch=3),
        dict(layers=2, hidden=128, heads=8, vocab=2048, seq=16, batch=4),
        dict(layers=4, hidden=32, heads=2, vocab=100, seq=128, batch=2),
        dict(layers=1, hidden=256, heads=4, vocab=3001, seq=24, batch=2),
        dict(layers=2, hidden=80, heads=5, vocab=777, seq=96, batch=1),
        dict(layers=6, hidden=32, heads=4, vocab=64, seq=40, batch=5),
    ]
    grid, i = [], 0
    for autocast in ('fp32', 'bf16'):
        for recompute in (False, True):
            for dropout in (0.0, 0.1):
                for k in range(5):
                    c = dict(shapes[(i + k) % len(shapes)])
                    c.update(dropout=dropout, recompute=recompute, autocast=autocast)
                    grid.append(c)
                i += 3
    return grid


def run_oracle(configs):
    """Feeds the configurations to the oracle (one JSON line each) and returns its saved_bytes values."""
    env = dict(os.environ, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1')
    payload = ''.join(json.dumps(c) + '\n' for c in configs)
    r = subprocess.run([sys.executable, ORACLE], input=payload, capture_output=True, text=True, env=env,
                       timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f'oracle failed (exit {r.returncode}): {r.stderr.strip()[-2000:]}')
    out = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    if len(out) != len(configs):
        raise RuntimeError(f'oracle returned {len(out)} results for {len(configs)} configurations')
    return [o['saved_bytes'] for o in out]


def activation_flags(c):
    h = c['hidden']
    return ['--model', 'gpt2', '--layers', c['layers'], '--hidden', h, '--heads', c['heads'],
            '--ffn-hidden', 4 * h, '--vocab', c['vocab'], '--max-positions', c['seq'], '--seq-len', c['seq'],
            '--micro-batch', c['batch'], '--mlp', 'gelu', '--norm', 'layernorm', '--tied-embeddings',
            '--precision', c['autocast'], '--dropout', c['dropout'],
            '--recompute', 'full' if c['recompute'] else 'none', '--attention', 'eager', '--impl', 'torch-nn',
            '--no-overheads', '--json']


def part_activations(gp):
    from torch_nn_formula import saved_bytes
    grid = activation_grid()
    t0 = time.time()
    measured = run_oracle(grid)
    print(f'[a] measured {len(grid)} configurations with the oracle in {time.time() - t0:.1f} s', flush=True)
    checks = []
    for c, m in zip(grid, measured):
        name = (f"{c['autocast']} rc={'full' if c['recompute'] else 'none'} p={c['dropout']} L={c['layers']} "
                f"h={c['hidden']} a={c['heads']} V={c['vocab']} s={c['seq']} b={c['batch']}")
        formula = saved_bytes(c['layers'], c['hidden'], c['heads'], c['vocab'], c['seq'], c['batch'],
                              c['dropout'], c['recompute'], autocast=c['autocast'])
        note = 'formula exact' if formula == m else f'formula {formula:,} ({fmt_err(rel_err(m, formula))})'
        per, err = gp.memory(activation_flags(c))
        est = None
        if per is not None:
            try:
                est = Gpuplan.value(per, 'activations') + Gpuplan.value(per, 'logits')
            except KeyError as e:
                err = str(e)
        ok = err is None and abs(rel_err(m, est)) <= ACT_TOLERANCE
        checks.append(Check('a', name, m, est, ok, err, note))
    return checks


# ------------------------------------------------------------------------------------- b) model states

def tensor_bytes(t):
    return t.numel() * t.element_size()


def unique_params(params):
    seen, out = set(), []
    for p in params:
        if p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            out.append(p)
    return out


def optimizer_state_bytes(opt):
    """(bytes of state tensors other than 'step', bytes of the 'step' tensors)."""
    main = step = 0
    for st in opt.state.values():
        for k, v in st.items():
            if not hasattr(v, 'numel'):
                continue
            if k == 'step':
                step += tensor_bytes(v)
            else:
                main += tensor_bytes(v)
    return main, step


def part_model_states(gp):
    import torch
    import torch.nn as nn
    from torch_gpt_saved_bytes import GPT
    torch.set_num_threads(1)
    L, h, a, V, S, b = 2, 64, 4, 500, 32, 2
    checks = []
    for name in ('adam', 'adamw', 'sgd-momentum'):
        torch.manual_seed(0)
        m = GPT(L, h, a, V, S, 0.0).train()
        params = unique_params(m.parameters())
        n = sum(p.numel() for p in params)
        if name == 'adam':
            opt = torch.optim.Adam(params, lr=1e-3)
        elif name == 'adamw':
            opt = torch.optim.AdamW(params, lr=1e-3)
        else:
            opt = torch.optim.SGD(params, lr=1e-2, momentum=0.9)
        for _ in range(2):
            idx = torch.randint(0, V, (b, S))
            loss = nn.functional.cross_entropy(m(idx, False).view(-1, V), idx.view(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        w = sum(tensor_bytes(p) for p in params)
        g = sum(tensor_bytes(p.grad) for p in params if p.grad is not None)
        o, step = optimizer_state_bytes(opt)
        per, err = gp.memory(['--params', n, '--precision', 'fp32', '--optimizer', name, '--no-overheads',
                              '--json'])
        cfg = f'GPT L={L} h={h} V={V}, N={n:,} params in {len(params)} tensors, {name}, 2 steps'
        for key, meas, note in (('weights', w, ''), ('gradients', g, ''),
                                ('optimizer_states', o, f"excludes {step:,} B of 'step' scalars" if step else '')):
            est, e = None, err
            if per is not None:
                try:
                    est = Gpuplan.value(per, key)
                except KeyError as ex:
                    e = str(ex)
            checks.append(Check('b', f'{cfg}: {key}', meas, est, e is None and est == meas, e, note))
    return checks


# ------------------------------------------------------------------------------------------- c) ZeRO-1

def _make_zero_model(kind):
    import torch
    import torch.nn as nn
    if kind == 'equal':
        # 12 parameters of 64x64: a whole-parameter partition over 2 or 4 ranks is exactly even.
        m = nn.Module()
        m.ws = nn.ParameterList(nn.Parameter(torch.randn(64, 64) * 0.05) for _ in range(12))
        return m
    from torch_gpt_saved_bytes import GPT
    return GPT(2, 64, 4, 500, 32, 0.0)


def _zero_loss(m, kind):
    import torch
    import torch.nn as nn
    if kind == 'equal':
        x = torch.randn(8, 64)
        for w in m.ws:
            x = torch.tanh(x @ w)
        return x.pow(2).mean()
    idx = torch.randint(0, 500, (2, 32))
    return nn.functional.cross_entropy(m(idx, False).view(-1, 500), idx.view(-1))


def _zero_worker(rank, world, port, kind, outdir):
    import torch
    import torch.distributed as dist
    from torch.distributed.optim import ZeroRedundancyOptimizer
    torch.set_num_threads(1)
    os.environ['MASTER_ADDR'] = '127.0.0.1'
    os.environ['MASTER_PORT'] = str(port)
    dist.init_process_group('gloo', rank=rank, world_size=world)
    try:
        torch.manual_seed(0)  # identical replicas on every rank
        m = _make_zero_model(kind)
        params = unique_params(m.parameters())
        opt = ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.Adam, lr=1e-3)
        torch.manual_seed(1 + rank)  # different data per rank, as in data parallelism
        for _ in range(2):
            opt.zero_grad(set_to_none=True)
            _zero_loss(m, kind).backward()
            for p in params:  # average gradients as DDP would
                dist.all_reduce(p.grad)
                p.grad /= world
            opt.step()
        main, step = optimizer_state_bytes(opt.optim)
        res = dict(rank=rank, optimizer_states=main, step=step, n=sum(p.numel() for p in params),
                   largest=max(p.numel() for p in params), local_params=sum(len(g['params'])
                                                                             for g in opt.optim.param_groups),
                   weights=sum(tensor_bytes(p) for p in params),
                   gradients=sum(tensor_bytes(p.grad) for p in params if p.grad is not None))
        with open(os.path.join(outdir, f'rank{rank}.json'), 'w') as f:
            json.dump(res, f)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def part_zero(gp):
    import torch.multiprocessing as mp
    checks = []
    for kind in ('equal', 'gpt'):
        for world in (2, 4):
            with tempfile.TemporaryDirectory() as d:
                t0 = time.time()
                mp.spawn(_zero_worker, args=(world, free_port(), kind, d), nprocs=world, join=True)
                ranks = [json.load(open(os.path.join(d, f'rank{r}.json'))) for r in range(world)]
            print(f'[c] ZeRO-1 {kind} model over {world} ranks measured in {time.time() - t0:.1f} s', flush=True)
            n, largest = ranks[0]['n'], ranks[0]['largest']
            states = [r['optimizer_states'] for r in ranks]
            mx, mn = max(states), min(states)
            per, err = gp.memory(['--params', n, '--precision', 'fp32', '--optimizer', 'adam', '--zero', 1,
                                  '--dp', world, '--gpus', world, '--no-overheads', '--json'])
            est = None
            if per is not None:
                try:
                    est = Gpuplan.value(per, 'optimizer_states')
                except KeyError as e:
                    err = str(e)
            split = ', '.join(f"r{r['rank']}: {r['local_params']} tensors {r['optimizer_states']:,} B"
                              for r in ranks)
            steps = sum(r['step'] for r in ranks)
            if kind == 'equal':
                cfg = f'12 x 64x64 params (N={n:,}), Adam, d={world}: max rank'
                ok = err is None and est == mx and mx == mn
                note = f'even split required and found ({split}); {steps:,} B of step scalars excluded'
            else:
                # Greedy whole-parameter partition: every rank's load is within one largest parameter of
                # the mean, so |estimate - max rank| <= 8 B x largest parameter (+8 B x d for rounding up).
                bound = 8 * largest + 8 * world
                cfg = f'GPT L=2 h=64 V=500 (N={n:,}), Adam, d={world}: max rank'
                ok = err is None and est is not None and abs(est - mx) <= bound and mn <= est + 8 * world
                note = (f'uneven whole-parameter split ({split}); min {mn:,} B; pass if abs(est - max) <= '
                        f'8 B x largest param ({largest:,}) + 8d = {bound:,} B; {steps:,} B of step scalars excluded')
            checks.append(Check('c', cfg, mx, est, ok, err, note))
            # weights and gradients stay replicated under ZeRO-1
            for key in ('weights', 'gradients'):
                meas = ranks[0][key]
                same = all(r[key] == meas for r in ranks)
                e2, est2 = err, None
                if per is not None:
                    try:
                        est2 = Gpuplan.value(per, key)
                    except KeyError as ex:
                        e2 = str(ex)
                checks.append(Check('c', f'{cfg.rsplit(":", 1)[0]}: {key} (replicated)', meas, est2,
                                    e2 is None and same and est2 == meas, e2, ''))
    return checks


# -------------------------------------------------------------------------------------------- report

PART_TITLES = {
    'a': 'a) Activations saved for backward: torch-nn GPT (pass within 2%)',
    'b': 'b) Model states after 2 optimizer steps, fp32 (exact match)',
    'c': 'c) ZeRO-1 (ZeroRedundancyOptimizer, gloo), Adam, per-rank optimizer state',
}


def write_report(path, checks, header_notes, gp_path):
    import torch
    lines = ['# gpuplan vs PyTorch: measured memory', '',
             f'PyTorch {torch.__version__} on CPU; gpuplan binary `{gp_path}`. Generated by '
             '`validation/run_torch_validation.py` (see `validation/README.md`). Bytes throughout; error % is '
             '(estimated − measured) / measured.', '']
    lines += header_notes
    for part in ('a', 'b', 'c'):
        cs = [c for c in checks if c.part == part]
        if not cs:
            continue
        lines += ['', f'## {PART_TITLES[part]}', '',
                  '| configuration | measured | estimated | error % | result | notes |',
                  '|---|---:|---:|---:|---|---|']
        for c in cs:
            note = c.note if c.error is None else (f'**{c.error}**' + (f'; {c.note}' if c.note else ''))
            lines.append(f'| {c.config} | {fmt_bytes(c.measured)} | {fmt_bytes(c.estimated)} | '
                         f'{fmt_err(rel_err(c.measured, c.estimated))} | {"pass" if c.ok else "FAIL"} | '
                         f'{note.replace("|", "/")} |')
        p = sum(c.ok for c in cs)
        lines += ['', f'{p} passed, {len(cs) - p} failed.']
    p = sum(c.ok for c in checks)
    lines += ['', f'**Total: {p} passed, {len(checks) - p} failed.**', '']
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, 'w') as f:
            f.write('\n'.join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--gpuplan', default='./build/gpuplan', help='path to the gpuplan binary')
    ap.add_argument('--out', default=os.path.join(HERE, 'torch_report.md'), help='markdown report to write')
    ap.add_argument('--parts', default='abc', help='subset of parts to run, e.g. "a" or "bc"')
    args = ap.parse_args()

    try:
        import torch
    except ImportError:
        print('error: PyTorch is not importable by this interpreter; run with /usr/bin/python3', file=sys.stderr)
        print('0 passed, 1 failed')
        return 1
    torch.set_num_threads(1)
    gp = Gpuplan(args.gpuplan)
    notes = []
    if gp.problem:
        print(f'error: {gp.problem}; measurements still run, every comparison fails', file=sys.stderr)
        notes.append(f'**{gp.problem}**: every comparison below fails.')

    checks = []
    runners = {'a': part_activations, 'b': part_model_states, 'c': part_zero}
    for part in args.parts:
        if part not in runners:
            ap.error(f'unknown part {part!r}')
        t0 = time.time()
        try:
            got = runners[part](gp)
        except Exception as e:  # a measurement that breaks is a failure, not a crash
            got = [Check(part, 'measurement', None, None, False, f'{type(e).__name__}: {e}')]
        checks += got
        p = sum(c.ok for c in got)
        print(f'[{part}] {p} passed, {len(got) - p} failed ({time.time() - t0:.1f} s)', flush=True)
        for c in got:
            if not c.ok:
                print(f'  FAIL {c.config}: measured {fmt_bytes(c.measured)} estimated {fmt_bytes(c.estimated)}'
                      + (f' ({c.error})' if c.error else ''), flush=True)
    write_report(args.out, checks, notes, args.gpuplan)
    passed = sum(c.ok for c in checks)
    failed = len(checks) - passed
    print(f'report written to {args.out}')
    print(f'{passed} passed, {failed} failed')
    return 0 if failed == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
