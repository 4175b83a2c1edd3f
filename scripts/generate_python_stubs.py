#!/usr/bin/env python3
"""Writes python/gpuplan/__init__.pyi from the library's option table, so the type stubs list exactly the keyword
arguments each function takes. tests/python/test_stubs.py checks that the shipped file is what this writes.

    PYTHONPATH=build/python python3 scripts/generate_python_stubs.py > python/gpuplan/__init__.pyi
"""
import keyword
import gpuplan._core as core

TYPES = {
    "integer": "int | str",  # counts also read as text: "8K", "1e6", "7B" (docs/api.md)
    "number": "float",
    "text": "str",
    "flag": "bool",
    "integer_list": "Sequence[int] | str",
    "text_list": "Sequence[str] | str",
    "file": "str | os.PathLike[str]",
    "file_list": "Sequence[str | os.PathLike[str]] | str | os.PathLike[str]",
    "model": "str | os.PathLike[str] | Mapping[str, Any] | Any",
}

# Functions whose first options are positional, as on the command line.
FUNCTIONS = [
    ("model", "model", ["model"], {}),
    ("memory", "memory", [], {}),
    ("estimate", "estimate", [], {}),
    ("plan", "plan", [], {"progress": "Callable[[int, int], object] | None"}),
    ("size", "size", [], {"progress": "Callable[[int, int], object] | None"}),
    ("comm", "comm", ["collective"], {"calibrate": "Sequence[str | os.PathLike[str]] | str | None", "out": "str | None"}),
    ("calibrate", "calibrate", ["calibrate"], {}),
    ("topo", "topo", ["text_or_path"], {}),
    ("catalog", "catalog", ["kind", "name"], {}),
]

HEADER = '''"""Type stubs of gpuplan (written by scripts/generate_python_stubs.py from the library's option table)."""
import os
from typing import Any, Callable, Mapping, Sequence

class InputError(ValueError):
    field: str | None
    value: str | None
    accepted: str | None
    def __init__(self, message: str, field: str | None = ..., value: str | None = ..., accepted: str | None = ...) -> None: ...

class Result(dict[str, Any]):
    def __getattr__(self, key: str) -> Any: ...

def options(question: str) -> list[Result]: ...
'''


def signature(question, positional, extra):
    table = {o["name"]: o for o in core.options(question)}
    kinds = core.OPTION_KINDS
    params = []
    for name in positional:
        if name == "text_or_path":
            params.append("text_or_path: str | os.PathLike[str] | None = ...")
        else:
            params.append(f"{name}: {TYPES[kinds[table[name]['kind']]]} | None = ...")
    params.append("*")
    params += [f"{name}: {kind} = ..." for name, kind in extra.items()]
    for name, o in table.items():
        name = name + "_" if keyword.iskeyword(name) else name   # from= is written from_= in Python
        if name in positional or (question == "topo" and name == "file"):
            continue
        params.append(f"{name}: {TYPES[kinds[o['kind']]]} | None = ...")
    return ", ".join(params)


def main():
    out = [HEADER]
    for function, question, positional, extra in FUNCTIONS:
        out.append(f"def {function}({signature(question, positional, extra)}) -> Result: ...\n")
    print("\n".join(out), end="")


if __name__ == "__main__":
    main()
