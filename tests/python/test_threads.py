"""The search runs without the GIL, on the threads asked for, and reports its progress from one thread."""
import threading

import pytest

import gpuplan

JOB = dict(model="llama-3.1-70b", system="dgx-h100", nodes=8, seq_len=4096, global_batch=256, top=3)


def layouts(result):
    return [p["layout"] for p in result["plans"]]


def test_thread_counts_give_the_same_plans():
    one = gpuplan.plan(threads=1, **JOB)
    two = gpuplan.plan(threads=2, **JOB)
    assert layouts(one) == layouts(two)
    assert [p["time"]["step_s"] for p in one["plans"]] == [p["time"]["step_s"] for p in two["plans"]]


def test_searches_from_several_python_threads_at_once():
    results = [None] * 3

    def search(i):
        results[i] = gpuplan.plan(threads=1, **JOB)

    threads = [threading.Thread(target=search, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert layouts(results[0]) == layouts(results[1]) == layouts(results[2])


def test_progress_reaches_the_whole_space_from_one_thread():
    calls = []
    result = gpuplan.plan(threads=2, progress=lambda done, total: calls.append((done, total, threading.get_ident())),
                          **JOB)
    assert calls and calls[-1][:2] == (result["space"], result["space"])
    assert len({ident for _, _, ident in calls}) == 1
    assert all(a[0] <= b[0] for a, b in zip(calls, calls[1:]))


def test_an_exception_in_the_progress_callback_is_raised_after_the_search():
    def fail(done, total):
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        gpuplan.plan(threads=2, progress=fail, **JOB)
