"""The shipped type stubs list exactly the options of the library, as scripts/generate_python_stubs.py writes them."""
import os
import subprocess
import sys

from conftest import ROOT


def test_stubs_are_up_to_date():
    import gpuplan
    stubs = os.path.join(os.path.dirname(gpuplan.__file__), "__init__.pyi")
    written = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "generate_python_stubs.py")],
                             capture_output=True, text=True, check=True, env=dict(os.environ)).stdout
    with open(stubs) as f:
        assert f.read() == written, "run: PYTHONPATH=build/python python3 scripts/generate_python_stubs.py > " \
                                    "python/gpuplan/__init__.pyi"
