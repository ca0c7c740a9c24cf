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


def _run_plain(udf: type, path: Path) -> ro.RunResult:
    module = ro.Module(udf)
    return ro.SyncExecutor(lambda x: module(x)).run([1, 2], journal=ro.Journal(str(path)))


def _write_modules(directory: Path, step: str) -> None:
    (directory / "reach_helpers.py").write_text(
        f"def adjust(x):\n    return x + {step}\n\n\ndef twice(x):\n    return 2 * adjust(x)\n"
    )
    (directory / "reach_udfs.py").write_text(
        "import reach_helpers\n"
        "from reach_helpers import adjust\n\n\n"
        "class Direct:\n    def run(self, xs):\n        return [adjust(x) for x in xs]\n\n\n"
        "class ThroughModule:\n"
        "    def run(self, xs):\n        return [reach_helpers.twice(x) for x in xs]\n"
    )


def _load_udfs(directory: Path, step: str) -> Any:
    import importlib
    import sys

    _write_modules(directory, step)
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
    for name in ("reach_helpers", "reach_udfs"):
        if name in sys.modules:
            importlib.reload(sys.modules[name])
        else:
            importlib.import_module(name)
    return sys.modules["reach_udfs"]


@pytest.mark.parametrize("udf", ["Direct", "ThroughModule"])
def test_a_changed_helper_that_a_module_calls_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, udf: str
) -> None:
    import sys

    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("reach_helpers", "reach_udfs"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    path = tmp_path / "run.journal"
    before = getattr(_load_udfs(tmp_path, "1"), udf)
    first = _run_plain(before, path).outputs
    assert first == ([2, 3] if udf == "Direct" else [4, 6])
    assert _run_plain(getattr(_load_udfs(tmp_path, "1"), udf), path).roots_restored == 2
    after = getattr(_load_udfs(tmp_path, "10"), udf)  # the helper, not the Module, changed
    with pytest.raises(ValueError, match=rf"{udf} \(code changed\)"):
        _run_plain(after, path)


def _filter_keeping_above(threshold: int) -> type:
    def keep(x: int) -> bool:
        return x > threshold

    class Keep:
        def run(self, xs: list[int]) -> list[bool]:
            return [keep(x) for x in xs]

    return Keep


def test_a_value_a_helper_captures_is_part_of_the_code(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    assert _run_plain(_filter_keeping_above(1), path).outputs == [False, True]
    assert _run_plain(_filter_keeping_above(1), path).roots_restored == 2
    with pytest.raises(ValueError, match=r"Keep \(code changed\)"):
        _run_plain(_filter_keeping_above(5), path)


def test_installed_packages_count_by_version_and_self_contained_udfs_by_their_source() -> None:
    import inspect
    import json

    from rayorch_cpp._code_reach import reached_code
    from rayorch_cpp._journal_modules import code_digest

    class UsesPytest:
        def run(self, xs: list[int]) -> list[int]:
            return [pytest.approx(x) and x for x in xs]

    reached = reached_code(UsesPytest)
    assert reached.get("package pytest") == pytest.__version__
    assert not any(k.startswith("function _pytest") for k in reached)  # not its code
    assert code_digest(UsesPytest) == code_digest(UsesPytest)  # stable
    plain = _scale_doubling()
    assert reached_code(plain) == {}
    source = inspect.getsource(plain).encode()
    import hashlib

    assert code_digest(plain) == hashlib.blake2b(source, digest_size=8).hexdigest()
    assert json.dumps(reached)  # the digest's input is plain data
