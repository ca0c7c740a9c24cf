"""A job's stages: the Modules a pipeline holds as attributes, named by the attribute, and
their options as the configuration sets them (laid over the Module's own, as the reference's
``stage_options`` are laid over its ``ray_options``)."""

from __future__ import annotations

from typing import Any

from .. import _core
from .._modules import RayModule
from ._typed import ConfigError, check_value, closest, parse_text

# The engine's options whose types a configuration is checked against before anything is
# built (the engine checks values again when the pipeline compiles); the others (Ray's actor
# options and the rest) are passed on as given.
_OPTION_TYPES: dict[str, Any] = {
    "replicas": int | str,
    "min_replicas": int,
    "max_replicas": int,
    "batch_size": int,
    "num_cpus": float,
    "num_gpus": float,
    "memory": int,
    "memory_limit": int,
    "timeout": float | None,
    "batch_wait": float,
    "infra_retries": int,
    "isolation": str | None,
    "reservation": str,
    "max_tasks_in_flight_per_actor": int,
    "resources": dict[str, float],
    "name": str,
    "version": str,
}
_AT_LEAST = {"min_replicas": 1, "max_replicas": 1, "batch_size": 1, "infra_retries": 0}
_NOT_NEGATIVE = ("num_cpus", "num_gpus", "batch_wait", "memory", "memory_limit")


def stage_modules(pipeline: Any) -> dict[str, RayModule]:
    """The pipeline's stages: each attribute holding a Module, by attribute name (a Module
    held twice is one stage, under its first name)."""
    out: dict[str, RayModule] = {}
    seen: set[int] = set()
    for name, value in vars(pipeline).items():
        if isinstance(value, RayModule) and id(value) not in seen:
            seen.add(id(value))
            out[name] = value
    return out


def known_options() -> set[str]:
    return set(_core.module_options()) | {"max_tasks_in_flight_per_actor"}


def parse_option(key: str, option: str, text: str) -> Any:
    """``--set STAGE.OPTION=TEXT``'s value, parsed by the option's type."""
    annotation = _OPTION_TYPES.get(option, Any)
    if option == "replicas":
        return text if text == "auto" else parse_text(key, text, int)
    return parse_text(key, text, annotation)


def check_option(key: str, option: str, value: Any) -> Any:
    """An option's value checked as far as a configuration can be before the pipeline
    compiles: its type, and the bounds every backend applies."""
    if option not in known_options():
        raise ConfigError(key, f"no such stage option; {closest(option, known_options())}")
    if option == "replicas":
        if value == "auto" or (type(value) is int and value >= 1):
            return value
        raise ConfigError(key, f"{value!r} is not a replica count (an int >= 1, or 'auto')")
    value = check_value(key, value, _OPTION_TYPES.get(option, Any))
    if option in _AT_LEAST and value < _AT_LEAST[option]:
        raise ConfigError(key, f"must be at least {_AT_LEAST[option]}, not {value}")
    if option in _NOT_NEGATIVE and value < 0:
        raise ConfigError(key, f"must be at least 0, not {value}")
    if option == "isolation" and value not in (None, "threads", "process"):
        raise ConfigError(key, f"{value!r} is not 'threads' or 'process'")
    return value


def apply_stage_options(
    modules: dict[str, RayModule], stages: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Lays each stage's options over its Module's; returns every stage's options as they
    now are (the resolved configuration). An unknown stage or option is a ConfigError."""
    for stage, options in stages.items():
        if stage not in modules:
            raise ConfigError(
                f"stages.{stage}", f"the pipeline has no stage {stage!r}; {closest(stage, modules)}"
            )
        if not isinstance(options, dict):
            raise ConfigError(f"stages.{stage}", "must be a table of option = value")
        checked = {k: check_option(f"stages.{stage}.{k}", k, v) for k, v in options.items()}
        modules[stage].ray_options(**checked)
    return {name: dict(sorted(_shown(m.options).items())) for name, m in modules.items()}


def _shown(options: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in options.items():
        out[k] = (
            v if v is None or isinstance(v, bool | int | float | str | dict | list) else repr(v)
        )
    return out
