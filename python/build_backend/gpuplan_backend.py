"""PEP 517 backend for `pip install .`: builds the gpuplan module with the project's CMake build for the
interpreter that runs pip, and packs it into a wheel. Needs no Python packages, so it works without a network."""
import base64
import csv
import hashlib
import io
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME, VERSION = "gpuplan", "0.1.0"
METADATA = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\nSummary: Plans large-model training\n"


def _console_scripts():
    """The [project.scripts] table of pyproject.toml as (name, "module:function") pairs. Read line by line:
    tomllib is only in Python 3.11+, and the table holds nothing but `name = "module:function"` lines."""
    scripts, inside = [], False
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        for raw in f:
            line = raw.split("#", 1)[0].strip()
            if line.startswith("["):
                inside = line == "[project.scripts]"
            elif inside and "=" in line:
                name, target = (part.strip().strip('"') for part in line.split("=", 1))
                scripts.append((name, target))
    return scripts


def _entry_points():
    lines = ["[console_scripts]"] + [f"{name} = {target}" for name, target in _console_scripts()]
    return ("\n".join(lines) + "\n").encode()


def _tag():
    interpreter = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{interpreter}-{interpreter}-{platform}"


def _build_package(build_dir):
    """Configures and builds the module; returns the folder holding the package."""
    jobs = str(os.cpu_count() or 2)
    subprocess.run(["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DGPUPLAN_PYTHON=ON",
                    f"-DPython_EXECUTABLE={sys.executable}", "-DGPUPLAN_BUILD_TESTS=OFF", "-DGPUPLAN_BENCH=OFF",
                    "-DGPUPLAN_WERROR=OFF"], check=True)
    subprocess.run(["cmake", "--build", build_dir, "--target", "gpuplan_python", "-j", jobs], check=True)
    return os.path.join(build_dir, "python", NAME)


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [path, f"sha256={digest}", str(len(data))]


def _write_wheel(package_dir, wheel_directory):
    dist_info = f"{NAME}-{VERSION}.dist-info"
    wheel_name = f"{NAME}-{VERSION}-{_tag()}.whl"
    files = {}
    for entry in sorted(os.listdir(package_dir)):
        path = os.path.join(package_dir, entry)
        if os.path.isfile(path) and not entry.endswith(".pyc"):
            with open(path, "rb") as f:
                files[f"{NAME}/{entry}"] = f.read()
    files[f"{dist_info}/METADATA"] = METADATA.encode()
    files[f"{dist_info}/entry_points.txt"] = _entry_points()
    files[f"{dist_info}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: gpuplan_backend\nRoot-Is-Purelib: false\n"
                                   f"Tag: {_tag()}\n").encode()
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for path, data in files.items():
        writer.writerow(_record_line(path, data))
    writer.writerow([f"{dist_info}/RECORD", "", ""])
    files[f"{dist_info}/RECORD"] = record.getvalue().encode()
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            wheel.writestr(path, data)
    return wheel_name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build_dir = tempfile.mkdtemp(prefix="gpuplan-wheel-")
    try:
        return _write_wheel(_build_package(build_dir), wheel_directory)
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)


def build_sdist(sdist_directory, config_settings=None):
    """The sources a build needs, without build folders or version control."""
    name = f"{NAME}-{VERSION}"
    skip = {".git", "build", "node_modules"}
    with tarfile.open(os.path.join(sdist_directory, f"{name}.tar.gz"), "w:gz") as tar:
        for entry in sorted(os.listdir(ROOT)):
            if entry in skip or entry.startswith("build-") or entry.startswith("."):
                continue
            tar.add(os.path.join(ROOT, entry), arcname=f"{name}/{entry}")
        info = tarfile.TarInfo(f"{name}/PKG-INFO")
        info.size = len(METADATA)
        tar.addfile(info, io.BytesIO(METADATA.encode()))
    return f"{name}.tar.gz"
