"""Values of a job's configuration checked against the types the pipeline declares.

A value comes from a TOML or JSON file (already typed) or from ``--set KEY=VALUE`` (text,
parsed by the declared type). Every error is a ConfigError naming the key, so that a job fails
before anything runs with a message a user can act on.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import types
import typing
from collections.abc import Iterable
from typing import Any, Literal, Union


class ConfigError(ValueError):
    """A configuration that cannot run: an unknown key, a wrong type, a missing input or
    parameter. Raised before anything runs; the job commands exit with status 2."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key


def closest(name: str, known: Iterable[str]) -> str:
    """A hint naming the known names closest to ``name`` (or all of them when few)."""
    known = sorted(set(known))
    near = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if near:
        return "did you mean " + " or ".join(repr(n) for n in near) + "?"
    if not known:
        return "there are none"
    shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
    return f"known: {shown}"


def type_name(annotation: Any) -> str:
    """How a declared type reads in a message."""
    if annotation is Any or annotation is None:
        return "any value"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def parse_text(key: str, text: str, annotation: Any) -> Any:
    """``--set``'s text as a value of ``annotation``: numbers, booleans (true/false, yes/no,
    on/off, 1/0), ``none``/``null`` for an optional value, JSON for lists, dicts and values
    of no declared type (plain text when it is not JSON)."""
    options = _union_members(annotation)
    if options is not None:
        if text.strip().lower() in ("none", "null") and type(None) in options:
            return None
        errors = []
        for member in (m for m in options if m is not type(None)):
            try:
                return parse_text(key, text, member)
            except ConfigError as error:
                errors.append(str(error))
        raise ConfigError(key, f"{text!r} is not a {type_name(annotation)}")
    if annotation is bool:
        lowered = text.strip().lower()
        if lowered in _TRUE | _FALSE:
            return lowered in _TRUE
        raise ConfigError(key, f"{text!r} is not a bool (true or false)")
    if annotation is int:
        try:
            return int(text)
        except ValueError:
            raise ConfigError(key, f"{text!r} is not an int") from None
    if annotation is float:
        try:
            return float(text)
        except ValueError:
            raise ConfigError(key, f"{text!r} is not a float") from None
    if annotation is str:
        return text
    if typing.get_origin(annotation) is Literal:
        allowed = typing.get_args(annotation)
        for value in allowed:
            if str(value) == text:
                return value
        raise ConfigError(key, f"{text!r} is not one of {', '.join(repr(a) for a in allowed)}")
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = text
    return check_value(key, parsed, annotation)


def _union_members(annotation: Any) -> tuple[Any, ...] | None:
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        return typing.get_args(annotation)
    return None


def check_value(key: str, value: Any, annotation: Any) -> Any:
    """``value`` (from a file, or parsed) checked against ``annotation``; an int is a float
    where a float is declared. Returns the value, converted where that is exact."""
    if annotation is Any or annotation is None or annotation is dataclasses.MISSING:
        return value
    options = _union_members(annotation)
    if options is not None:
        if value is None and type(None) in options:
            return None
        for member in (m for m in options if m is not type(None)):
            try:
                return check_value(key, value, member)
            except ConfigError:
                continue
        raise ConfigError(key, f"{value!r} is not a {type_name(annotation)}")
    origin = typing.get_origin(annotation)
    if origin is Literal:
        if value in typing.get_args(annotation):
            return value
        allowed = ", ".join(repr(a) for a in typing.get_args(annotation))
        raise ConfigError(key, f"{value!r} is not one of {allowed}")
    if annotation is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise ConfigError(key, f"{value!r} is not a float")
    if annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(key, f"{value!r} is not an int")
    if annotation in (bool, str):
        if type(value) is annotation:
            return value
        raise ConfigError(key, f"{value!r} is not a {annotation.__name__}")
    if origin in (list, tuple) or annotation in (list, tuple):
        if not isinstance(value, list | tuple):
            raise ConfigError(key, f"{value!r} is not a list")
        args = typing.get_args(annotation)
        item = args[0] if args and (origin is list or (len(args) == 2 and args[1] is ...)) else Any
        checked = [check_value(f"{key}[{i}]", v, item) for i, v in enumerate(value)]
        return tuple(checked) if origin is tuple or annotation is tuple else checked
    if origin is dict or annotation is dict:
        if not isinstance(value, dict):
            raise ConfigError(key, f"{value!r} is not a table of names to values")
        args = typing.get_args(annotation)
        item = args[1] if len(args) == 2 else Any
        return {str(k): check_value(f"{key}.{k}", v, item) for k, v in value.items()}
    if isinstance(annotation, type) and not isinstance(value, annotation):
        raise ConfigError(key, f"{value!r} is not a {annotation.__name__}")
    return value
