"""The Ray backend's suite (the case files cases_ray_*.py), run in a private network and PID
namespace with only loopback, so the Ray cluster it starts binds nothing but 127.0.0.1 and none
of its processes can outlive it.

The cluster is started once per session: one namespaced pytest run executes the selected cases
of every case file, with the cluster fixture of ray_cluster.py loaded as a plugin so that all
files share it, and writes each case's result to a JSON file (case_results.py); every case is
then reported here as its own test, by name, with its outcome and message. The case ids are
read from the case files with ast, so collecting this file does not import Ray."""

from __future__ import annotations

import ast
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
# The case files, in the order the namespaced run executes them: the cases that remove nodes
# (failures, preemption) come after those that expect every node alive and spread actors over
# them.
CASE_FILES = tuple(
    HERE / name
    for name in (
        "cases_ray_results.py",
        "cases_ray_blocks.py",
        "cases_ray_failures.py",
        "cases_ray_rebuild.py",
        "cases_ray_workloads.py",
        "cases_ray_tail.py",
        "cases_ray_preemption.py",
        "cases_ray_sinks.py",
        "cases_ray_jobs.py",
    )
)
TIMEOUT_S = 1200


def parameter_id(value: object) -> str | None:
    """pytest's id of one parameter value, for the values whose id is their text."""
    if value is None or isinstance(value, bool | int | float):
        return str(value)
    if isinstance(value, str) and value.isascii() and value.isprintable():
        return value
    return None


def parametrized_ids(function: ast.FunctionDef) -> list[str] | None:
    """The ids of a case's parameter sets when one literal @pytest.mark.parametrize gives them;
    None when it has none or pytest's ids cannot be told without running it."""
    marks = [
        d
        for d in function.decorator_list
        if isinstance(d, ast.Call) and ast.unparse(d.func) == "pytest.mark.parametrize"
    ]
    if len(marks) != 1 or len(marks[0].args) != 2 or marks[0].keywords:
        return None
    try:
        names, values = (ast.literal_eval(a) for a in marks[0].args)
    except ValueError:
        return None
    single = isinstance(names, str) and "," not in names
    ids = []
    for value in values:
        parts = [value] if single else list(value)
        texts = [parameter_id(p) for p in parts]
        if None in texts:
            return None
        ids.append("-".join(t for t in texts if t is not None))
    return ids if len(set(ids)) == len(ids) else None


def case_ids(path: Path) -> list[str]:
    """Every case of the file, as pytest names it after "::" (a parametrized case whose ids
    cannot be told statically stays one case covering all its parameter sets)."""
    ids = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            params = parametrized_ids(node)
            ids += [f"{node.name}[{p}]" for p in params] if params else [node.name]
    return ids


def case_files(paths: tuple[Path, ...]) -> dict[str, Path]:
    """Every case id of the files, with the file that holds it; a case name is the test's name
    here, so two files may not use the same one."""
    out: dict[str, Path] = {}
    for path in paths:
        for case in case_ids(path):
            if case in out:
                raise ValueError(f"case {case} is in both {out[case].name} and {path.name}")
            out[case] = path
    return out


CASE_FILE = case_files(CASE_FILES)
CASE_IDS = list(CASE_FILE)


def covers(case: str, result_id: str) -> bool:
    return result_id == case or ("[" not in case and result_id.startswith(case + "["))


def namespace_unavailable() -> str | None:
    """Why the private namespace cannot be made here, or None when it can."""
    missing = [tool for tool in ("unshare", "ip") if shutil.which(tool) is None]
    if missing:
        return f"needs {' and '.join(missing)} for a private loopback-only namespace"
    if os.geteuid() != 0:
        return "needs root for a private loopback-only namespace (unshare --net --pid)"
    probe = subprocess.run(
        ["unshare", "--net", "--pid", "--fork", "--mount-proc", "true"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"unshare --net --pid failed here: {probe.stderr.strip()}"
    return None


@dataclass
class SuiteRun:
    """The namespaced run of the selected cases."""

    returncode: int | None  # None: killed after TIMEOUT_S
    output: str
    collected: list[str]
    cases: dict[str, dict[str, str]]

    def describe(self) -> str:
        if self.returncode is None:
            status = f"timed out after {TIMEOUT_S} s"
        else:
            status = f"exited with status {self.returncode}"
        return f"the namespaced run of the Ray cases {status}; its output ends:\n{self.output}"


def selected_cases(session: pytest.Session) -> list[str]:
    return [
        str(item.callspec.params["case"])
        for item in session.items
        if isinstance(item, pytest.Function) and item.originalname == "test_ray_case"
    ]


@pytest.fixture(scope="session")
def suite_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> SuiteRun:
    pytest.importorskip("ray", reason="the Ray suite needs ray installed")
    reason = namespace_unavailable()
    if reason is not None:
        pytest.skip(reason)
    selected = selected_cases(request.session)
    targets = (
        [str(path) for path in CASE_FILES]
        if set(selected) >= set(CASE_IDS) or not selected
        else [f"{CASE_FILE[case]}::{case}" for case in selected]
    )
    results = tmp_path_factory.mktemp("ray_cases") / "results.json"
    # case_results.py and ray_cluster.py are loaded as plugins from here.
    python_path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)
    command = (
        f"ip link set lo up && RAYORCH_CASE_RESULTS={shlex.quote(str(results))} "
        f"PYTHONPATH={shlex.quote(python_path)} "
        f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider "
        "-p case_results -p ray_cluster "
        f"-o python_files=cases_*.py --rootdir {shlex.quote(str(HERE.parent))} "
        + " ".join(shlex.quote(t) for t in targets)
        + " "
        + os.environ.get("RAYORCH_RAY_TEST_ARGS", "")
    )
    try:
        done = subprocess.run(
            ["unshare", "--net", "--pid", "--fork", "--mount-proc", "sh", "-c", command],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        returncode: int | None = done.returncode
        output = done.stdout[-20000:] + done.stderr[-5000:]
    except subprocess.TimeoutExpired as expired:
        returncode = None
        output = str(expired.stdout or "")[-20000:] + str(expired.stderr or "")[-5000:]
    document: dict[str, Any] = (
        json.loads(results.read_text()) if results.exists() else {"collected": [], "cases": {}}
    )
    return SuiteRun(returncode, output, document["collected"], document["cases"])


@pytest.mark.parametrize("case", CASE_IDS)
def test_ray_case(suite_run: SuiteRun, case: str) -> None:
    found = {k: v for k, v in suite_run.cases.items() if covers(case, k)}
    extra_args = os.environ.get("RAYORCH_RAY_TEST_ARGS", "")
    if not found and extra_args and suite_run.returncode in (0, 1, 5):
        pytest.skip(f"not selected by RAYORCH_RAY_TEST_ARGS={extra_args!r}")
    if not found:
        pytest.fail(f"no result for {case}: {suite_run.describe()}", pytrace=False)
    failed = [f"{k}: {v['message']}" for k, v in found.items() if v["outcome"] == "failed"]
    if failed:
        pytest.fail("\n".join(failed), pytrace=False)
    skipped = [v["message"] for v in found.values() if v["outcome"] == "skipped"]
    if skipped and len(skipped) == len(found):
        pytest.skip("; ".join(sorted(set(skipped))))


def test_the_namespaced_run_completed(suite_run: SuiteRun) -> None:
    """The run itself ended normally (status 1 only for failed cases, reported above), and
    every case it ran is reported by one of the tests above."""
    unreported = [c for c in suite_run.collected if not any(covers(k, c) for k in CASE_IDS)]
    assert not unreported, f"cases run but not reported here: {unreported}"
    assert suite_run.returncode in (0, 1) or (
        suite_run.returncode == 5 and os.environ.get("RAYORCH_RAY_TEST_ARGS")
    ), suite_run.describe()
    assert suite_run.returncode == 0 or any(
        v["outcome"] == "failed" for v in suite_run.cases.values()
    ), suite_run.describe()


def test_every_case_file_is_run() -> None:
    """A case file missing from CASE_FILES would never run: every cases_*.py here is listed."""
    assert sorted(HERE.glob("cases_*.py")) == sorted(CASE_FILES)
