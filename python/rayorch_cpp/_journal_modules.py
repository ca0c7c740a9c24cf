"""What a run journal's recorded outputs were computed by: one digest per Module of its UDF's
code (or its ``version`` option), constructor arguments and output-determining options,
kept next to the journal, so that a rerun after a change to a Module is refused by name
instead of restoring outputs the changed code would not compute (docs/JOURNAL.md).

The engine's own journal header holds one digest of the plan (Calls, UDF names, static
arguments, wiring), which cannot tell a changed UDF body or constructor argument from the
old one, nor which Module changed; this file adds what only the Python side can see.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import pickle
import types
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from . import _core
from ._code_reach import reached_code

# Options that tune how a Module runs, not what it computes: a change to them keeps the
# journal's records valid (as pool and batch sizes stay out of the engine's plan digest).
# Every option a Module accepts is one of them; `version` stands for the code instead.
_TUNING_OPTIONS = frozenset(_core.module_options())


@dataclass(frozen=True, slots=True)
class ModuleSnapshot:
    """A Module as a compiled program captured it: later edits to the Module do not change
    what the program runs, so they must not change its digest either."""

    name: str
    udf: Any
    init_args: tuple[Any, ...]
    init_kwargs: dict[str, Any]
    options: dict[str, Any]

    @classmethod
    def of(cls, module: Any) -> ModuleSnapshot:
        """A RayModule's snapshot (its name, UDF, constructor arguments and options)."""
        return cls(
            module.name,
            module.udf,
            tuple(module.init_args),
            dict(module.init_kwargs),
            dict(module.options),
        )


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _code_bytes(code: types.CodeType) -> bytes:
    """A code object's bytecode and constants, nested code objects included."""
    parts = [code.co_code]
    for const in code.co_consts:
        parts.append(
            _code_bytes(const) if isinstance(const, types.CodeType) else repr(const).encode()
        )
    parts.append(repr(code.co_names).encode())
    return b"\0".join(parts)


def _code_objects(udf: Any) -> Iterable[types.CodeType]:
    target = udf if isinstance(udf, type) or hasattr(udf, "__code__") else type(udf)
    if hasattr(target, "__code__"):
        yield target.__code__
        return
    for klass in inspect.getmro(target):
        if klass is object:
            continue
        for _, member in sorted(vars(klass).items()):
            function = getattr(member, "__func__", member)
            if hasattr(function, "__code__"):
                yield function.__code__


def code_digest(udf: Any) -> str:
    """A digest of a UDF's code: its source, else its bytecode (a UDF defined in a REPL or
    loaded from bytecode only), with what that code reaches (_code_reach.py: the user's own
    functions and classes it calls, the values its closures capture, the versions of the
    installed packages it uses). A C++ UDF (a name) is digested by its name."""
    if isinstance(udf, str):
        return _digest(udf.encode())
    target = udf if isinstance(udf, type) or inspect.isroutine(udf) else type(udf)
    try:
        own = _digest(inspect.getsource(target).encode())
    except (OSError, TypeError):
        own = _digest(b"\1".join(_code_bytes(code) for code in _code_objects(udf)))
    reached = reached_code(udf)
    if not reached:  # a UDF that reaches nothing keeps the digest of its own code
        return own
    return _digest((own + json.dumps(reached, sort_keys=True)).encode())


def _value_digest(value: Any) -> str:
    try:
        return _digest(pickle.dumps(value, protocol=4))
    except Exception:
        return _digest(repr(value).encode())


def module_digests(modules: Iterable[ModuleSnapshot]) -> dict[str, dict[str, str]]:
    """Per Module (by name; a repeated name gets ``#k``): the digests of its code (or its
    ``version`` option when set), constructor arguments and output-determining options."""
    out: dict[str, dict[str, str]] = {}
    for module in modules:
        name, k = module.name, 1
        while name in out:
            name, k = f"{module.name}#{k}", k + 1
        version = module.options.get("version")
        options = {k: v for k, v in module.options.items() if k not in _TUNING_OPTIONS}
        out[name] = {
            "code": f"version {version}" if version is not None else code_digest(module.udf),
            "constructor arguments": _value_digest(
                (module.init_args, sorted(module.init_kwargs.items()))
            ),
            "options": _value_digest(sorted((k, repr(v)) for k, v in options.items())),
        }
    return out


def _changes(recorded: dict[str, dict[str, str]], now: dict[str, dict[str, str]]) -> list[str]:
    changes = []
    for name, digests in now.items():
        before = recorded.get(name)
        if before is None:
            changes.append(f"{name} (added)")
            continue
        changed = [what for what, digest in digests.items() if before.get(what) != digest]
        if changed:
            changes.append(f"{name} ({', '.join(changed)} changed)")
    changes.extend(f"{name} (removed)" for name in recorded if name not in now)
    return changes


def sidecar_path(journal_path: str) -> str:
    """Where the Module digests of the journal at ``journal_path`` are kept."""
    return journal_path + ".modules.json"


def check_journal_modules(
    journal_path: str, digests: dict[str, dict[str, str]], force: bool
) -> None:
    """Refuses (ValueError naming the Modules) a journal whose outputs were recorded by
    Modules that differ from ``digests``, unless ``force``; then records ``digests`` as what
    the journal's next records are computed by. A journal recorded without digests (or an
    empty one) is accepted."""
    sidecar = sidecar_path(journal_path)
    journal_has_records = os.path.exists(journal_path) and os.path.getsize(journal_path) > 0
    recorded: dict[str, dict[str, str]] | None = None
    if journal_has_records and os.path.exists(sidecar):
        try:
            with open(sidecar, encoding="utf-8") as f:
                recorded = json.load(f)["modules"]
        except (OSError, ValueError, KeyError, TypeError):
            recorded = None
    if recorded == digests:
        return
    if recorded is not None and not force:
        changes = _changes(recorded, digests)
        raise ValueError(
            f"the run journal {journal_path!r} was written by another pipeline: Module "
            f"{'; Module '.join(changes)} since. Restoring its records would return outputs "
            "this pipeline does not compute. Delete the journal (or "
            f"pass another path) to compute every row again, or pass "
            f"journal=Journal({journal_path!r}, force=True) to restore the recorded outputs "
            "anyway. A Module's version option (Module(..., version='2')) stands for its "
            "code where only a change of it should invalidate the journal."
        )
    try:
        with open(sidecar, "w", encoding="utf-8") as f:
            json.dump({"modules": digests}, f, indent=1, sort_keys=True)
    except OSError:
        pass  # an unwritable place: the engine refuses the journal path itself, by name
