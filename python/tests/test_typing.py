"""Every public name is documented; the extension's stub covers the extension."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import rayorch_cpp as ro
from rayorch_cpp import _core


def test_every_public_name_has_a_docstring() -> None:
    missing = []
    for name in ro.__all__:
        obj = getattr(ro, name)
        if name == "__version__":
            continue
        if not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") or not (callable(member) or isinstance(member, property)):
                    continue
                if not inspect.getdoc(getattr(obj, attr)):
                    missing.append(f"{name}.{attr}")
    for name in ro.F.__all__:
        if not inspect.getdoc(getattr(ro.F, name)):
            missing.append(f"F.{name}")
    assert missing == []


def test_the_stub_lists_every_name_of_the_extension() -> None:
    stub = Path(ro.__file__).with_name("_core.pyi")
    tree = ast.parse(stub.read_text())
    declared = {
        node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))
    }
    actual = {n for n in dir(_core) if not n.startswith("_")}
    # The pdf2md names exist only in an extension built with the pdf2md stages.
    optional = {"PageRef", "PageImage", "DocumentInfo", "Markdown"} | {
        n for n in declared if n.startswith("pdf2md_")
    }
    assert actual <= declared
    assert declared - optional <= actual
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            methods = (
                {
                    m.name
                    for m in node.body
                    if isinstance(m, ast.FunctionDef) and not m.name.startswith("_")
                }
                | {
                    t.target.id
                    for t in node.body
                    if isinstance(t, ast.AnnAssign) and isinstance(t.target, ast.Name)
                }
                | {  # enum members
                    n.id
                    for t in node.body
                    if isinstance(t, ast.Assign)
                    for n in t.targets
                    if isinstance(n, ast.Name)
                }
            )
            if not hasattr(_core, node.name):
                continue
            real = {n for n in vars(getattr(_core, node.name)) if not n.startswith("_")}
            assert methods == real, node.name
    assert (Path(ro.__file__).parent / "py.typed").exists()
