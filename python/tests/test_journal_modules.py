"""A run journal restores only outputs computed by the same Modules: a changed UDF body,
constructor argument or version is refused by name, and ``force`` resumes anyway."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rayorch_cpp as ro


def _scale_doubling() -> type:
    class Scale:
        def __init__(self, offset: int = 0) -> None:
            self.offset = offset

        def run(self, xs: list[int]) -> list[int]:
            return [x * 2 + self.offset for x in xs]

    return Scale


def _scale_tripling() -> type:
    class Scale:
        def __init__(self, offset: int = 0) -> None:
            self.offset = offset

        def run(self, xs: list[int]) -> list[int]:
            return [x * 3 + self.offset for x in xs]

    return Scale


def _run(udf: type, path: Path, *, force: bool = False, **module: Any) -> ro.RunResult:
    offset = module.pop("offset", 0)
    scale = ro.Module(udf, **module).pre_init(offset)
    return ro.SyncExecutor(lambda x: scale(x)).run(
        [1, 2], journal=ro.Journal(str(path), force=force)
    )


def test_a_changed_udf_body_is_refused_naming_the_module(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    assert _run(_scale_doubling(), path).outputs == [2, 4]
    with pytest.raises(ValueError) as refused:
        _run(_scale_tripling(), path)
    message = str(refused.value)
    assert "Module Scale (code changed)" in message
    assert "force=True" in message and "RunOptions" not in message
    resumed = _run(_scale_tripling(), path, force=True)
    assert resumed.roots_restored == 2 and resumed.outputs == [2, 4]


def test_changed_constructor_arguments_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    assert _run(_scale_doubling(), path, offset=1).outputs == [3, 5]
    with pytest.raises(ValueError, match=r"Scale \(constructor arguments changed\)"):
        _run(_scale_doubling(), path, offset=5)
    same = _run(_scale_doubling(), path, offset=1, replicas=2, batch_size=1)
    assert same.roots_restored == 2, "tuning options keep the records valid"


def test_a_version_stands_for_the_code(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    assert _run(_scale_doubling(), path, version="1").outputs == [2, 4]
    kept = _run(_scale_tripling(), path, version="1")
    assert kept.roots_restored == 2 and kept.outputs == [2, 4]
    with pytest.raises(ValueError, match=r"Scale \(code changed\)"):
        _run(_scale_tripling(), path, version="2")


def test_a_fresh_journal_records_and_restores(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    _run(_scale_doubling(), path)
    again = _run(_scale_doubling(), path)
    assert again.roots_restored == 2 and again.outputs == [2, 4]
    assert (tmp_path / "run.journal.modules.json").exists()


def test_unpacking_a_single_output_port_names_num_outputs() -> None:
    def forward(x: ro.Port) -> Any:
        a, b = ro.Module(_scale_doubling())(x)
        return a

    with pytest.raises(TypeError, match=r"one output.*num_outputs=2") as raised:
        ro.compile(forward)
    assert "non-iterable" not in str(raised.value)
