"""The registry of benchmarks: each one a record of strings (its public class name, the
``module:Class`` path of its configuration class, the package holding its runtime
environment file), so that looking one up imports nothing until ``load`` is called.

Registration order is the order ``available()`` lists; the built-ins come first, in the
order below, then whatever ``register`` adds."""

from __future__ import annotations

import importlib
import importlib.resources
import json
from typing import Any

# name -> (public class name, "module:Class", runtime package, runtime environment file)
_SPECS: dict[str, tuple[str, str, str, str]] = {}


def _builtin(name: str, public_name: str, package: str) -> None:
    module = f"rayorch_cpp.benchmarks.{package}"
    _SPECS[name] = (public_name, f"{module}.benchmark:{public_name}", module, "env.json")


_builtin("document_topology", "DocumentTopologyBench", "document_topology")
_builtin("dual_vllm", "DualVllmBench", "dual_vllm")
_builtin("mineru", "MinerUBench", "mineru")
_builtin("mineru_scale", "MinerUScaleBench", "mineru_scale")
_builtin("video_panda70m", "VideoPanda70MBench", "panda70m")
_builtin("sglang_vllm", "SglangVllmBench", "sglang_vllm")
_builtin("video_caption_topology", "VideoCaptionTopologyBench", "video_caption")
_builtin("video_multimodal_topology", "VideoMultimodalTopologyBench", "video_multimodal")
_builtin("yolo_sam", "YoloSamBench", "yolo_sam")


def available() -> tuple[str, ...]:
    """The registered benchmarks' names, in registration order."""
    return tuple(_SPECS)


def register(
    name: str,
    *,
    public_name: str,
    benchmark_class: str,
    runtime_package: str,
    runtime_resource: str = "env.json",
    exist_ok: bool = False,
) -> None:
    """Records a benchmark by strings only (nothing is imported): ``benchmark_class`` is
    ``"module:Class"``, ``runtime_package`` the package whose ``runtime_resource`` holds its
    Ray runtime environment. ValueError for an empty field, or a name already registered
    unless ``exist_ok``."""
    if not (name and public_name and benchmark_class and runtime_package):
        raise ValueError("Benchmark registration fields must be non-empty")
    if name in _SPECS and not exist_ok:
        raise ValueError(f"benchmark {name!r} is already registered")
    _SPECS[name] = (public_name, benchmark_class, runtime_package, runtime_resource)


def _spec(name: str) -> tuple[str, str, str, str]:
    try:
        return _SPECS[name]
    except KeyError as error:
        raise KeyError(
            f"unknown benchmark {name!r}; available: {', '.join(available())}"
        ) from error


def class_path(name: str) -> str:
    """The ``module:Class`` of a benchmark's configuration class."""
    return _spec(name)[1]


def load(name: str) -> type:
    """The benchmark's configuration class, imported now (the first time)."""
    path = class_path(name)
    module, sep, attribute = path.partition(":")
    if not sep or not module or not attribute:
        raise ValueError("benchmark_class must use the 'module:attribute' form")
    found = getattr(importlib.import_module(module), attribute)
    if not isinstance(found, type):
        raise TypeError(f"{path} is not a class")
    return found


def runtime_env(name: str) -> dict[str, Any]:
    """The benchmark's Ray runtime environment (its ``env.json``, schema version 1), read
    afresh on each call."""
    _, _, package, resource = _spec(name)
    path = importlib.resources.files(package).joinpath(resource)
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if document.pop("schema_version", None) != 1:
        raise ValueError(f"unsupported runtime_env schema in {path}")
    return document


def public_names() -> dict[str, str]:
    """Public class name -> registry name."""
    out: dict[str, str] = {}
    for name in available():
        public = _SPECS[name][0]
        if public in out:
            raise ValueError(f"duplicate benchmark public name {public!r}")
        out[public] = name
    return out


__all__ = ["available", "load", "register"]
