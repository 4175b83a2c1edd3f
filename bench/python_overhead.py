#!/usr/bin/env python3
"""What a Python call to gpuplan costs over the C++ call it makes.

For each request: the mean time of gpuplan.memory(**kwargs) (keywords to a dict, dict to JSON, the library, JSON
to a dict, the Result wrapper) and of the library alone on the same request already as JSON (answer_json in a C++
loop, gpuplan._core.time_answer). The difference is the overhead of the Python module.

    PYTHONPATH=build/python python3 bench/python_overhead.py
"""
import timeit

import gpuplan
from gpuplan import _core

REQUESTS = {
    "params only (7e9, fp16, Adam)": dict(params=7e9, precision="fp16", optimizer="adam"),
    "llama-3.1-70b on 64 GPUs, every term": dict(model="llama-3.1-70b", gpus=64, tp=8, pp=4, seq_len=8192,
                                                 global_batch=512, zero=1, sequence_parallel=True,
                                                 recompute="selective"),
}


def mean_seconds(call, repeats):
    return min(timeit.repeat(call, number=repeats, repeat=1)) / repeats


def main():
    print(f"{'request':<40} {'Python call':>12} {'C++ call':>12} {'overhead':>10}")
    for name, request in REQUESTS.items():
        repeats = 2000
        # Alternating rounds, the fastest of each: the machine's noise only ever adds time.
        python, library = float("inf"), float("inf")
        for _ in range(7):
            python = min(python, mean_seconds(lambda: gpuplan.memory(**request), repeats))
            library = min(library, _core.time_answer("memory", request, repeats))
        print(f"{name:<40} {python * 1e6:>10.1f}us {library * 1e6:>10.1f}us {(python - library) * 1e6:>8.1f}us")


if __name__ == "__main__":
    main()
