"""A pipeline's parameters: its constructor's, typed by their annotations, with a dataclass
parameter opened into its fields (``config.dpi``), so that a job's configuration can set any
of them by name and a wrong name or type is caught before the pipeline is built."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from dataclasses import dataclass
from typing import Any

from ._typed import ConfigError, check_value, closest, parse_text


@dataclass(frozen=True, slots=True)
class Parameter:
    """One settable value: a constructor parameter or a field of a dataclass parameter."""

    annotation: Any  # Any when undeclared
    default: Any  # inspect.Parameter.empty when required
    # The dataclass this parameter is (its fields are parameters in turn), or None.
    dataclass_type: type | None


REQUIRED = inspect.Parameter.empty


def _dataclass_of(annotation: Any) -> type | None:
    """The dataclass an annotation names (``C`` or ``C | None``), or None."""
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return annotation
    members = typing.get_args(annotation)
    if members and type(None) in members:
        found = [m for m in members if m is not type(None)]
        if len(found) == 1:
            return _dataclass_of(found[0])
    return None


def _hints(target: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(target)
    except Exception:  # an annotation that names what cannot be imported here: take it as Any
        return {}


def constructor_parameters(pipeline_class: type) -> dict[str, Parameter]:
    """The parameters of ``pipeline_class``'s constructor (``*args``/``**kwargs`` left
    out: a job sets parameters by name)."""
    init = pipeline_class.__init__  # type: ignore[misc]
    if init is object.__init__:
        return {}
    hints = _hints(init)
    out = {}
    for name, p in list(inspect.signature(init).parameters.items())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            continue
        annotation = hints.get(name, Any)
        out[name] = Parameter(annotation, p.default, _dataclass_of(annotation))
    return out


def dataclass_parameters(cls: type) -> dict[str, Parameter]:
    """The fields of a dataclass, as parameters."""
    hints = _hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        annotation = hints.get(f.name, Any)
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = REQUIRED
        out[f.name] = Parameter(annotation, default, _dataclass_of(annotation))
    return out


def _children(parameter: Parameter) -> dict[str, Parameter] | None:
    return (
        None if parameter.dataclass_type is None else dataclass_parameters(parameter.dataclass_type)
    )


def set_text(
    overrides: dict[str, Any], known: dict[str, Parameter], path: list[str], text: str, key: str
) -> None:
    """Puts ``--set``'s text for the parameter at ``path`` into ``overrides`` (nested dicts
    for dataclass parameters), parsed by its declared type."""
    name = path[0]
    if name not in known:
        raise ConfigError(key, f"the pipeline has no parameter {name!r}; {closest(name, known)}")
    parameter = known[name]
    if len(path) == 1:
        overrides[name] = parse_text(key, text, parameter.annotation)
        return
    children = _children(parameter)
    if children is None:
        raise ConfigError(key, f"parameter {name!r} is a {parameter.annotation}, not a dataclass")
    nested = overrides.setdefault(name, {})
    if not isinstance(nested, dict):
        raise ConfigError(key, f"parameter {name!r} was set whole before; set its fields instead")
    set_text(nested, children, path[1:], text, key)


def build_arguments(
    known: dict[str, Parameter], overrides: dict[str, Any], prefix: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The keyword arguments to build with, and every parameter as resolved (for the run
    folder's configuration). A dataclass parameter given as a table is built from its
    defaults with those fields replaced; one not given is left to the constructor."""
    unknown = [k for k in overrides if k not in known]
    if unknown:
        key = f"{prefix}{unknown[0]}"
        raise ConfigError(key, f"no such parameter; {closest(unknown[0], known)}")
    arguments: dict[str, Any] = {}
    resolved: dict[str, Any] = {}
    for name, parameter in known.items():
        key = f"{prefix}{name}"
        children = _children(parameter)
        if name in overrides:
            value = overrides[name]
            if children is not None and isinstance(value, dict):
                assert parameter.dataclass_type is not None
                fields, shown = build_arguments(children, value, key + ".")
                arguments[name] = _construct(parameter.dataclass_type, fields, key)
                resolved[name] = shown
                continue
            arguments[name] = check_value(key, value, parameter.annotation)
            resolved[name] = _plain(arguments[name])
            continue
        if parameter.default is REQUIRED:
            raise ConfigError(key, f"required and not set; set it with --set {key}=VALUE")
        if children is not None and parameter.dataclass_type is not None:
            try:
                shown_default = parameter.default or parameter.dataclass_type()
            except TypeError:
                shown_default = parameter.default
            resolved[name] = _plain(shown_default)
        else:
            resolved[name] = _plain(parameter.default)
        if prefix and parameter.default is not REQUIRED:
            arguments[name] = parameter.default  # a dataclass field: built whole
    return arguments, resolved


def _construct(cls: type, fields: dict[str, Any], key: str) -> Any:
    try:
        return cls(**fields)
    except (TypeError, ValueError) as error:
        raise ConfigError(key, f"{cls.__name__} refuses these values: {error}") from error


def _plain(value: Any) -> Any:
    """A value as the resolved configuration (JSON) shows it."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)
