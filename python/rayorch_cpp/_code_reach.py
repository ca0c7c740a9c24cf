"""The code a UDF runs beyond its own body, for the run journal's Module digests
(_journal_modules.py): the functions and classes its code reaches through global names and
closures, transitively, as long as they are the user's own (defined in a module outside the
standard library and the installed packages), the values its closures capture, and the
versions of the installed packages it reaches instead of their code.

A helper's source is read where Python can find it (else its bytecode), so editing a helper
that a Module calls changes the Module's digest, as editing the Module itself does. Names
are resolved statically, from the names each code object loads (``co_names``) in its
function's globals: a function reached only through a value computed at run time (a
dictionary of callbacks filled later, ``getattr`` with a built name) is not seen; a Module's
``version`` option stands for its code where that matters."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import os
import pickle
import sys
import sysconfig
import types
from collections.abc import Iterator
from typing import Any

# Global values whose change is a change of behaviour and that are cheap to digest; any other
# global value (a loaded model, a connection) is state, not code, and is left out.
_SIMPLE_VALUES = (int, float, complex, str, bytes, bool, type(None))
# Visiting stops after this many functions and classes: a UDF that reaches more is digested
# by what was reached first (the order is deterministic).
_MOST_REACHED = 5000


def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots.update({sys.base_prefix, sys.base_exec_prefix} - {sys.prefix})
    return tuple(sorted(os.path.realpath(r) + os.sep for r in roots))


_INSTALLED = _installed_roots()


def is_own_module(name: str | None) -> bool:
    """Whether the module ``name`` is the user's own code: loaded from a file outside the
    standard library and the installed packages (``__main__`` included)."""
    module = sys.modules.get(name or "")
    path = getattr(module, "__file__", None)
    if module is None or not path:
        return False
    return not os.path.realpath(path).startswith(_INSTALLED)


@functools.cache
def _distributions() -> dict[str, list[str]]:
    """Top-level module -> the installed distributions providing it (read once: it scans
    every installed distribution)."""
    return dict(importlib.metadata.packages_distributions())


@functools.cache
def _package_version(top: str) -> tuple[str, str] | None:
    """(distribution, version) of the installed package whose top-level module is ``top``;
    None for the standard library, built-ins and what no distribution provides."""
    if not top or top in sys.stdlib_module_names or top == "builtins":
        return None
    for distribution in _distributions().get(top, []):
        try:
            return distribution, importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    version = getattr(sys.modules.get(top), "__version__", None)
    return (top, str(version)) if version is not None else None


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _source_digest(target: Any) -> str:
    try:
        return _digest(inspect.getsource(target).encode())
    except (OSError, TypeError):
        code = getattr(target, "__code__", None)
        return _digest(code.co_code if code is not None else repr(target).encode())


def _value_digest(value: Any) -> str:
    try:
        return _digest(pickle.dumps(value, protocol=4))
    except Exception:
        return _digest(repr(value).encode())


def _loaded_names(code: types.CodeType) -> Iterator[str]:
    """The global and attribute names a code object and the code nested in it load."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _loaded_names(const)


def _functions_of(target: Any) -> Iterator[types.FunctionType]:
    """A function itself; a class's (or an instance's class's) own functions, base classes
    included."""
    if isinstance(target, types.FunctionType):
        yield target
        return
    klass = target if isinstance(target, type) else type(target)
    for base in inspect.getmro(klass):
        if base is object:
            continue
        for _, member in sorted(vars(base).items()):
            function = getattr(member, "__func__", member)
            if isinstance(function, property):
                function = function.fget
            if isinstance(function, types.FunctionType):
                yield function


def reached_code(udf: Any) -> dict[str, str]:
    """What ``udf`` reaches beyond its own body, by a stable name: ``function M.f`` and
    ``class M.C`` (the user's own, by source digest), ``closure f.x`` and ``global M.X``
    (captured and global values, by value digest), ``package P`` (an installed package's
    version)."""
    reached: dict[str, str] = {}
    seen: set[int] = {id(udf)}
    pending = list(_functions_of(udf))
    seen.update(id(f) for f in pending)

    def visit(value: Any, label: str) -> None:
        if isinstance(value, types.ModuleType):
            if not is_own_module(value.__name__):
                note_package(value.__name__)
            return
        if isinstance(value, types.FunctionType | type):
            module = getattr(value, "__module__", None)
            if not is_own_module(module):
                note_package(module)
                return
            if id(value) in seen or len(seen) >= _MOST_REACHED:
                return
            seen.add(id(value))
            kind = "class" if isinstance(value, type) else "function"
            reached[f"{kind} {module}.{value.__qualname__}"] = _source_digest(value)
            if isinstance(value, types.FunctionType):
                pending.append(value)
                return
            methods = [f for f in _functions_of(value) if id(f) not in seen]
            seen.update(id(f) for f in methods)
            pending.extend(methods)
        elif label.startswith("closure ") or isinstance(value, _SIMPLE_VALUES):
            reached[label] = _value_digest(value)

    def note_package(module: str | None) -> None:
        found = _package_version((module or "").split(".")[0])
        if found is not None:
            reached[f"package {found[0]}"] = found[1]

    while pending:
        function = pending.pop()
        scope = function.__globals__
        module = scope.get("__name__", "?")
        names = sorted(set(_loaded_names(function.__code__)))
        for name in names:
            if name not in scope:
                continue
            value = scope[name]
            visit(value, f"global {module}.{name}")
            if isinstance(value, types.ModuleType) and is_own_module(value.__name__):
                # An own module reached by name: the attributes this code loads from it.
                for attribute in names:
                    if attribute in vars(value):
                        visit(vars(value)[attribute], f"global {value.__name__}.{attribute}")
        cells = function.__closure__ or ()
        for variable, cell in zip(function.__code__.co_freevars, cells):
            try:
                captured = cell.cell_contents
            except ValueError:  # a cell not filled yet
                continue
            visit(captured, f"closure {function.__qualname__}.{variable}")
    return dict(sorted(reached.items()))
