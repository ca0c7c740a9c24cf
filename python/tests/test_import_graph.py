"""The rayorch_cpp package has no import cycle: no module imports, at any depth and in any
place (module level, under TYPE_CHECKING, inside a function), a module that imports it back.
Read from the sources with ``ast``, so the test sees imports that never run."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = "rayorch_cpp"
ROOT = Path(__file__).resolve().parents[1] / PACKAGE


def module_name(path: Path) -> str:
    parts = [PACKAGE, *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(name: str, is_package: bool, tree: ast.AST, known: set[str]) -> set[str]:
    """The package's modules that `tree` imports anywhere in its body."""
    package = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # `from . import x` imports the module x when there is one, else a name of `prefix`.
            targets = [
                f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix
                for a in node.names
            ]
        else:
            continue
        out.update(t for t in targets if t in known and t != name)
    return out


def import_graph() -> dict[str, set[str]]:
    sources = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
    # The extension modules (_core) are known by their stubs; they import nothing back.
    known = set(sources) | {module_name(p) for p in ROOT.rglob("*.pyi")}
    return {
        name: imported_modules(
            name, path.name == "__init__.py", ast.parse(path.read_text(), str(path)), known
        )
        for name, path in sources.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None."""
    done: set[str] = set()
    for start in sorted(graph):
        stack: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        on_path = {start}
        while stack:
            node, todo = stack[-1]
            if not todo:
                stack.pop()
                on_path.discard(node)
                done.add(node)
                continue
            nxt = todo.pop()
            if nxt in done:
                continue
            if nxt in on_path:
                path = [n for n, _ in stack]
                return path[path.index(nxt) :] + [nxt]
            on_path.add(nxt)
            stack.append((nxt, sorted(graph.get(nxt, ()))))
    return None


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    assert f"{PACKAGE}._compile" in graph and f"{PACKAGE}._ray_backend" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_a_cycle_through_a_function_level_import_is_found() -> None:
    # The checker itself: imports inside functions and under TYPE_CHECKING count.
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c"}
    a = ast.parse("from . import b\n")
    b = ast.parse("def f():\n    from .c import thing\n")
    c = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n")
    graph = {
        "pkg.a": imported_modules("pkg.a", False, a, known),
        "pkg.b": imported_modules("pkg.b", False, b, known),
        "pkg.c": imported_modules("pkg.c", False, c, known),
    }
    assert graph == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.a"}}
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1] and len(cycle) == 4
