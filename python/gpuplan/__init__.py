"""gpuplan: plans large-model training.

How much memory every GPU needs, what each collective and each training step costs, and which layout of tensor,
pipeline, context, expert and data parallelism is fastest. Each function answers one question; its keyword
arguments are the options of ``gpuplan <question>`` on the command line in snake_case (``--seq-len`` is
``seq_len``), and its result is the dict ``gpuplan <question> --json`` prints, with attribute access
(``result.per_gpu.total``). Sizes are bytes (decimal GB = 1e9 bytes), rates GB/s, times seconds.

    >>> import gpuplan
    >>> gpuplan.memory(params=7e9, precision="fp16", optimizer="adam")["per_gpu"]["total"]

Bad input raises :class:`gpuplan.InputError` (a ValueError) naming the option, the value and what is accepted.
"""
import keyword
import os

from . import _core
from ._errors import InputError

__all__ = ["InputError", "Result", "model", "memory", "estimate", "plan", "size", "comm", "calibrate", "topo",
           "catalog", "options"]
__version__ = "0.1.0"


class Result(dict):
    """A result: the dict the command line prints with --json; keys are also attributes (``r.per_gpu.total``)."""

    def __getattr__(self, key):
        try:
            return _wrap(self[key])
        except KeyError:
            raise AttributeError(key) from None

    def __dir__(self):
        return list(super().__dir__()) + [k for k in self.keys() if k.isidentifier()]


def _wrap(value):
    if isinstance(value, dict) and not isinstance(value, Result):
        return Result(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _value(value):
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "to_dict") and not isinstance(value, dict):
        return value.to_dict()  # a transformers PretrainedConfig
    return value


def _option(name):
    # A keyword argument named as a Python keyword takes a trailing underscore: from_="train.sh" is --from.
    return name[:-1] if name.endswith("_") and keyword.iskeyword(name[:-1]) else name


def _answer(question, options, progress=None):
    request = {_option(name): _value(value) for name, value in options.items() if value is not None}
    return Result(_core.answer(question, request, progress))


def options(question):
    """The options of a question (``"memory"``, ``"plan"``, ...): name, path, kind, help with unit and default."""
    return [Result(o) for o in _core.options(question)]


def model(model=None, **options):
    """The architecture, exact parameter counts and FLOPs per token of a model.

    ``model`` is a catalog name, a path to a Hugging Face config.json (or a folder holding one), a dict of one, or
    an object with ``to_dict()`` such as a transformers PretrainedConfig.
    """
    return _answer("model", dict(options, model=model))


def memory(**options):
    """Every byte on every GPU of a training job, by component and pipeline stage; fixes when it does not fit."""
    return _answer("memory", options)


def estimate(**options):
    """Step time, its breakdown, throughput, MFU and memory of a layout on a cluster (``system=``, ``nodes=``)."""
    return _answer("estimate", options)


def plan(progress=None, **options):
    """The fastest layouts that fit, from an exhaustive search, explained.

    ``progress(done, total)`` is called from one thread about ten times a second while the search runs (with the
    GIL); ``threads`` sets the worker threads (0: one per core). The search runs without the GIL.
    """
    return _answer("plan", options, progress)


def size(progress=None, **options):
    """How many GPUs of which kind, for how long: the fastest layout of every system (``systems=``) and node count
    (``nodes="1:2048"``) for a token budget (``tokens="15T"``), with days, GPU-hours, cost and energy.

    ``progress(done, total)`` counts the searches done; ``chart="file.svg"`` writes the chart (its SVG text is
    also in the result's ``chart_svg``).
    """
    return _answer("size", options, progress)


def comm(collective=None, **options):
    """What one collective costs on a fabric (as nccl-tests prints it); with ``calibrate=[files]`` the fit of the
    collective model to measured nccl-tests outputs (see :func:`calibrate`)."""
    if options.get("calibrate") is not None:
        return calibrate(collective=collective, **options)
    return _answer("comm", dict(options, collective=collective))


def calibrate(calibrate=None, **options):
    """The collective model fitted to nccl-tests outputs (``calibrate`` lists the files); ``out`` writes the
    calibration file that ``comm_calibration=`` reads. With ``runs=[files]`` instead (CSV tables of measured
    runs, Megatron-LM logs): the step-time constants fitted to them (``runs_fit``), and ``out`` writes the file
    ``perf=`` reads (docs/estimate.md, "Calibrate from your runs")."""
    if isinstance(calibrate, (str, os.PathLike)):
        calibrate = [calibrate]
    runs = options.pop("runs", None)
    if isinstance(runs, (str, os.PathLike)):
        runs = [runs]
    if runs is not None:
        options["runs"] = [_value(r) for r in runs]
    return _answer("calibrate", dict(options, calibrate=[_value(c) for c in calibrate or []]))


def topo(text_or_path=None, **options):
    """Link matrix, NVLink domains, GPU-NIC pairing and placement advice of one node, from the text of
    ``nvidia-smi topo -m`` (or rocm-smi/amd-smi), a path to a file holding it, or with neither the NVIDIA driver."""
    source = _value(text_or_path)
    if isinstance(source, str) and "\n" in source:
        source = {"path": "text", "text": source}
    return _answer("topo", dict(options, file=source))


def catalog(kind=None, name=None, **options):
    """The built-in GPUs, links, systems and models (``kind``), or one entry in detail (``name``), with sources."""
    return _answer("catalog", dict(options, kind=kind, name=name))


def _document():
    """Each function's docstring lists its options with their units and defaults, from the library's table."""
    for question, function in (("model", model), ("memory", memory), ("estimate", estimate), ("plan", plan),
                               ("size", size), ("comm", comm), ("calibrate", calibrate), ("topo", topo), ("catalog", catalog)):
        lines = [function.__doc__.rstrip(), "", "Options:"]
        for o in _core.options(question):
            lines.append(f"    {o['name']}: {o['help']}")
        function.__doc__ = "\n".join(lines) + "\n"


_document()
