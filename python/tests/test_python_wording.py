"""The engine's messages reach a Python user in the Python API's spelling: no ``ro::``,
``F::``, ``RunOptions.`` or ``.recovery(...)`` of the C++ API."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import rayorch_cpp as ro
from rayorch_cpp import F

_CPP = re.compile(
    r"ro::|F::|rayorch::|Isolation::|RunOptions\.|\.recovery\(|\.isolation\(|journal\.force"
)


def _python_words(error: BaseException) -> str:
    message = str(error)
    assert not _CPP.search(message), message
    return message


class Boom:
    def run(self, xs: list[int]) -> list[int]:
        raise RuntimeError("boom")


class Same:
    def run(self, xs: list[int]) -> list[int]:
        return xs


def test_an_aborting_failure_names_the_python_recovery_option() -> None:
    boom = ro.Module(Boom)
    with pytest.raises(ro.ExecutionError) as info:
        ro.SyncExecutor(lambda x: boom(x)).run([1])
    assert "recovery=RecoveryPolicy.retry_batch(n)" in _python_words(info.value)


def test_a_memory_limit_names_the_python_isolation_option() -> None:
    same = ro.Module(Same, memory_limit=1 << 30)
    with pytest.raises(ro.CompileError) as info:
        ro.compile(lambda x: same(x))
    assert 'isolation="process"' in _python_words(info.value)


def test_operator_errors_name_the_python_operators() -> None:
    with pytest.raises(ro.CompileError) as info:
        ro.compile(lambda x: F.reduce(x))
    assert _python_words(info.value).startswith("F.reduce of p0")


def test_journal_errors_name_run_keywords(tmp_path: Path) -> None:
    same = ro.Module(Same)
    with pytest.raises(ValueError) as unopenable:
        ro.SyncExecutor(lambda x: same(x)).run([1], journal=tmp_path / "no" / "run.journal")
    assert "cannot be opened" in _python_words(unopenable.value)
    path = tmp_path / "run.journal"
    ro.SyncExecutor(lambda x: same(x)).run([1], journal=path)
    with pytest.raises(ValueError) as other_inputs:
        ro.SyncExecutor(lambda x: same(x)).run([2], journal=path)
    assert "allow_other_inputs=True" in _python_words(other_inputs.value)
    with pytest.raises(ValueError) as unwritable:
        ro.SyncExecutor(lambda x: same(x)).run([1], trace=str(tmp_path))
    assert _python_words(unwritable.value).startswith("trace ")


def test_an_added_module_is_refused_in_python_words(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    same, boom = ro.Module(Same), ro.Module(Boom)

    def longer(x: Any) -> Any:
        return boom(same(x))

    ro.SyncExecutor(lambda x: same(x)).run([1], journal=path)
    with pytest.raises(ValueError) as info:
        ro.SyncExecutor(longer).run([1], journal=path)
    message = _python_words(info.value)
    assert "Module Boom (added)" in message and "force=True" in message
