"""From a command line to a job that can run: the pipeline class found by its import path,
built with its parameters, its stages' options laid over, the sections resolved; every
mistake a ConfigError naming the key, before anything runs."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._modules import RayModule
from .._pipeline import Pipeline
from ._config import SECTION_TYPES, Sections, read_config_file, sections_from, split_assignment
from ._parameters import build_arguments, constructor_parameters, set_text
from ._stages import apply_stage_options, parse_option, stage_modules
from ._typed import ConfigError, closest


@dataclass
class JobRequest:
    """What the command line asks for, before it is resolved."""

    pipeline: str | None = None  # MODULE:CLASS or FILE.py:CLASS; else the file's
    config: str | None = None  # a TOML or JSON file
    assignments: Sequence[str] = ()  # --set KEY=VALUE, in order
    inputs: Sequence[str] = ()  # --input, overriding input.paths
    output: str | None = None  # --output, overriding output.directory
    backend: str | None = None
    address: str | None = None


@dataclass
class ResolvedJob:
    """A job ready to run: the pipeline built and configured, and the configuration as
    resolved (every parameter, stage option and section, as the run folder records it)."""

    pipeline_ref: str
    pipeline: Any
    stages: dict[str, RayModule]
    sections: Sections
    resolved: dict[str, Any]


def _import_module(name: str) -> Any:
    if name.endswith(".py") or os.sep in name:
        path = Path(name)
        if not path.is_file():
            raise ConfigError("pipeline", f"{name}: no such file")
        module_name = path.stem
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ConfigError("pipeline", f"{name}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        return module
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does: the working folder's modules
    return importlib.import_module(name)


def load_pipeline_class(ref: str) -> type:
    """The Pipeline subclass named ``MODULE:CLASS`` (or ``path/file.py:CLASS``)."""
    module_name, sep, class_name = ref.rpartition(":")
    if not sep or not module_name or not class_name:
        raise ConfigError("pipeline", f"{ref!r}: name the pipeline as MODULE:CLASS")
    try:
        module = _import_module(module_name)
    except ConfigError:
        raise
    except Exception as error:
        raise ConfigError(
            "pipeline", f"cannot import {module_name!r}: {type(error).__name__}: {error}"
        ) from error
    found = getattr(module, class_name, None)
    if found is None:
        pipelines = [
            n for n, v in vars(module).items() if inspect.isclass(v) and issubclass(v, Pipeline)
        ]
        raise ConfigError(
            "pipeline", f"{module_name} has no {class_name!r}; {closest(class_name, pipelines)}"
        )
    if not (inspect.isclass(found) and issubclass(found, Pipeline)):
        raise ConfigError(
            "pipeline", f"{ref} is a {type(found).__name__}, not a rayorch_cpp.Pipeline subclass"
        )
    return found


def resolve(request: JobRequest) -> ResolvedJob:
    """The job the request describes; ConfigError for anything that would not run."""
    document = read_config_file(request.config) if request.config else {}
    ref = request.pipeline or document.get("pipeline")
    if not isinstance(ref, str) or not ref:
        raise ConfigError(
            "pipeline", "no pipeline: name it as MODULE:CLASS (or pipeline = in --config)"
        )
    cls = load_pipeline_class(ref)
    parameters = constructor_parameters(cls)

    parameter_values: dict[str, Any] = dict(document.get("parameters", {}) or {})
    stage_values: dict[str, dict[str, Any]] = {
        k: dict(v) if isinstance(v, dict) else v for k, v in (document.get("stages") or {}).items()
    }
    section_assignments: list[tuple[list[str], str]] = []
    stage_texts: list[tuple[list[str], str, str]] = []  # path, text, key
    for assignment in request.assignments:
        path, text = split_assignment(assignment)
        key = ".".join(path)
        head = path[0]
        if head == "pipeline":
            raise ConfigError(key, "name the pipeline as the command's first argument")
        if head == "parameters":
            set_text(parameter_values, parameters, path[1:] or [""], text, key)
        elif head == "stages":
            if len(path) != 3:
                raise ConfigError(key, "stage options are stages.STAGE.OPTION")
            stage_texts.append((path[1:], text, key))
        elif head in SECTION_TYPES:
            section_assignments.append((path, text))
        elif head in parameters:
            set_text(parameter_values, parameters, path, text, key)
        else:
            stage_texts.append((path, text, key))

    sections = sections_from(document, section_assignments)
    if request.inputs:
        sections.input.paths = list(request.inputs)
    if request.output:
        sections.output.directory = request.output
    if request.backend:
        sections.backend.name = request.backend  # type: ignore[assignment]
    if request.address:
        sections.backend.address = request.address

    arguments, shown_parameters = build_arguments(parameters, parameter_values, "")
    try:
        pipeline = cls(**arguments)
    except Exception as error:
        raise ConfigError(
            "parameters",
            f"{cls.__name__}({', '.join(f'{k}=...' for k in arguments)}) raised "
            f"{type(error).__name__}: {error}",
        ) from error
    stages = stage_modules(pipeline)
    for path, text, key in stage_texts:
        stage, option = path[0], path[-1]
        if len(path) != 2 or stage not in stages:
            names = list(parameters) + list(stages)
            raise ConfigError(
                key, f"the pipeline has no parameter or stage {stage!r}; {closest(stage, names)}"
            )
        stage_values.setdefault(stage, {})[option] = parse_option(key, option, text)
    ambiguous = sorted(set(parameters) & set(stages))
    for name in ambiguous:
        if any(a.split(".")[0].strip() == name for a in request.assignments):
            raise ConfigError(
                name,
                f"{name!r} is both a parameter and a stage: write parameters.{name} or "
                f"stages.{name}.OPTION",
            )
    shown_stages = apply_stage_options(stages, stage_values)
    resolved = {
        "pipeline": ref,
        "parameters": shown_parameters,
        "stages": shown_stages,
        **sections.as_dict(),
    }
    return ResolvedJob(ref, pipeline, stages, sections, resolved)
