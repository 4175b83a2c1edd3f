"""The Python module against the command line: both must give the same JSON for the same inputs.

Run by ctest (tests/python) with PYTHONPATH at the built package and GPUPLAN_BINARY at the gpuplan program."""
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")


def gpuplan_binary():
    return os.environ.get("GPUPLAN_BINARY", os.path.join(ROOT, "build", "gpuplan"))


def cli(*args, expect_status=0):
    """What `gpuplan ARGS` prints: the parsed JSON (with --json), else the text; run from the repository root."""
    done = subprocess.run([gpuplan_binary(), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == expect_status, done.stderr
    return json.loads(done.stdout) if "--json" in args else done.stdout + done.stderr


@pytest.fixture
def data():
    return DATA


@pytest.fixture(autouse=True)
def in_root(monkeypatch):
    # Relative paths in requests resolve as the command line's do.
    monkeypatch.chdir(ROOT)
