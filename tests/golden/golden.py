#!/usr/bin/env python3
"""Golden tests of what the gpuplan command line prints.

Each case of cases.txt runs `gpuplan ARGS` from the repository root; standard output, standard error and the exit
status are compared with NAME.out. Text is compared exactly; standard output that is JSON is compared as JSON
values (key order free, numbers to 1e-9 relative), so that a change of key order alone is not a failure but every
value is guarded. The search time, which differs from run to run, is masked.

    python3 tests/golden/golden.py --gpuplan build/gpuplan            # check
    python3 tests/golden/golden.py --gpuplan build/gpuplan --update   # rewrite the .out files after a change
"""
import argparse
import difflib
import json
import math
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STDERR_MARK = "--- stderr ---"
STATUS_MARK = "--- exit status "

# Values that change between runs of the same command.
MASKS = [
    (re.compile(r'("search_seconds": )[0-9.eE+-]+'), r"\g<1>0"),
    (re.compile(r"(by the time bound, in )[0-9.]+( s)"), r"\g<1>T\g<2>"),
    (re.compile(r"(layouts evaluated in )[0-9.]+( s)"), r"\g<1>T\g<2>"),
]


def read_cases():
    cases = []
    with open(os.path.join(HERE, "cases.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, args = line.partition(":")
            cases.append((name.strip(), shlex.split(args)))
    return cases


def mask(text):
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text


def run_case(gpuplan, args):
    env = dict(os.environ, LC_ALL="C")
    done = subprocess.run([gpuplan] + args, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    return mask(done.stdout) + STDERR_MARK + "\n" + mask(done.stderr) + f"{STATUS_MARK}{done.returncode} ---\n"


def split(record):
    out, _, rest = record.partition(STDERR_MARK + "\n")
    return out, rest


def close(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if a == b:
            return True
        return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


def same(expected, actual):
    exp_out, exp_rest = split(expected)
    act_out, act_rest = split(actual)
    if exp_rest != act_rest:
        return False
    try:
        return close(json.loads(exp_out), json.loads(act_out))
    except ValueError:
        return exp_out == act_out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpuplan", required=True, help="the gpuplan program to run")
    parser.add_argument("--update", action="store_true", help="rewrite the golden files")
    parser.add_argument("cases", nargs="*", help="only these cases (default: all)")
    args = parser.parse_args()
    gpuplan = os.path.abspath(args.gpuplan)
    failed = []
    cases = [c for c in read_cases() if not args.cases or c[0] in args.cases]
    for name, case_args in cases:
        path = os.path.join(HERE, name + ".out")
        actual = run_case(gpuplan, case_args)
        if args.update:
            with open(path, "w", encoding="utf-8") as f:
                f.write(actual)
            continue
        expected = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if not same(expected, actual):
            failed.append(name)
            sys.stdout.writelines(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                                       f"{name}.out (golden)", f"{name} (gpuplan {' '.join(case_args)})"))
    if args.update:
        print(f"golden: wrote {len(cases)} files in {os.path.relpath(HERE, ROOT)}")
        return 0
    if failed:
        print(f"golden: {len(failed)} case(s) differ: {', '.join(failed)}; if intended, run: make golden")
        return 1
    print(f"golden: {len(cases)} cases match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
