"""No module of the rayorch_cpp package reads another object's private attributes or imports
another module's private names: what one part needs of another is a named accessor (as
CompiledProgram.native, output_tree, call_pools), so each module can change its own
underscore names freely. Read from the sources with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "rayorch_cpp"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def foreign_private_reads(tree: ast.AST, modules: set[str]) -> list[str]:
    """Each ``x._name`` whose ``x`` is not ``self`` or ``cls``, and each ``from .m import
    _name`` where ``_name`` is not itself a module of the package (such as ``_core``)."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and node.level:
            for alias in node.names:
                if _private(alias.name) and not (node.module is None and alias.name in modules):
                    found.append(
                        f"line {node.lineno}: from .{node.module or ''} import {alias.name}"
                    )
    return found


def test_no_module_reads_private_names_of_another() -> None:
    modules = {p.stem for p in ROOT.iterdir() if p.suffix in (".py", ".pyi")}
    sources = sorted(ROOT.rglob("*.py"))
    assert any(p.name == "_executor.py" for p in sources)
    found = {
        p.name: hits
        for p in sources
        if (hits := foreign_private_reads(ast.parse(p.read_text(), str(p)), modules))
    }
    assert found == {}


def test_the_check_finds_foreign_reads_and_allows_own_ones() -> None:
    code = (
        "from . import _core\n"
        "from ._api import _active\n"
        "class A:\n"
        "    def f(self, other):\n"
        "        self._x = other._y\n"
        "        return cls._z, _core.Core, type(self).__name__\n"
    )
    assert foreign_private_reads(ast.parse(code), {"_core", "_api"}) == [
        "line 2: from ._api import _active",
        "line 5: other._y",
    ]
