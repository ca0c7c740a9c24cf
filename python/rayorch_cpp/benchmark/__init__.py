"""Benchmarks packaged as the reference packages them (``rayorch.benchmark`` in ``rayorch``
0.1.1): a benchmark is a configuration dataclass with ``run()`` and ``submit()``, registered by
strings in ``registry`` and loaded on first use, so its configurations run with the import
changed. The built-in ones live in ``rayorch_cpp.benchmarks``; their classes are attributes
here (``rayorch_cpp.benchmark.MinerUBench``), imported when first named.

For a pipeline of one's own as a job, see ``python -m rayorch_cpp run`` (docs/JOBS.md)."""

from __future__ import annotations

from typing import Any

from .execution import benchmark_config, run_benchmark
from .registry import available, load, public_names, register
from .report import BenchmarkReport
from .submission import BenchmarkRun, LocalSource, submit_benchmark

__all__ = [
    "BenchmarkReport",
    "BenchmarkRun",
    "DocumentTopologyBench",
    "DualVllmBench",
    "LocalSource",
    "MinerUBench",
    "MinerUScaleBench",
    "SglangVllmBench",
    "VideoCaptionTopologyBench",
    "VideoMultimodalTopologyBench",
    "VideoPanda70MBench",
    "YoloSamBench",
    "available",
    "benchmark_config",
    "load",
    "register",
    "run_benchmark",
    "submit_benchmark",
]


def __getattr__(name: str) -> Any:
    """A benchmark class by its public name, imported now and kept."""
    names = public_names()
    if name not in names:
        raise AttributeError(name)
    cls = load(names[name])
    globals()[name] = cls
    return cls


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(public_names()))
