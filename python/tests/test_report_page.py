"""The report page and the live page from Python (docs/REPORT.md): ``RunResult.report_page``
and ``python -m rayorch_cpp report`` draw a run's JSON report, refusing a run without one
and a broken report with what is wrong; ``live=`` serves the page while the run lasts (read
from inside the run, so the order is causal, not timed) and nothing listens after it; bad
``live`` values are refused before anything runs."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import rayorch_cpp as ro


class Count:
    """Adds one; fails row value 2."""

    def run(self, xs: list[int]) -> list[int | ro.RecordFailure]:
        return [ro.RecordFailure("two is bad") if x == 2 else x + 1 for x in xs]


def count_pipeline() -> Any:
    count = ro.RayModule(Count).ray_options(replicas=1, batch_size=1)
    return lambda x: count(x)


def test_a_runs_report_page_is_drawn_from_its_report(tmp_path: Path) -> None:
    report = tmp_path / "run.json"
    with ro.Executor(count_pipeline()) as executor:
        result = executor.run([1, 2, 3], report=str(report), progress=False)
        page = Path(result.report_page(tmp_path / "page.html")).read_text()
        calls = [c["call"] for c in json.loads(report.read_text())["calls"]]
        assert calls and all(f"<td class='call-name'>{c}</td>" in page for c in calls)
        assert "<th>parents failed</th><td>1</td>" in page
        assert "<script" not in page
        without = executor.run([1], progress=False)
    with pytest.raises(ValueError, match="run with report='run.json'"):
        without.report_page(tmp_path / "none.html")


def test_the_report_command_draws_a_report_and_names_what_is_wrong(tmp_path: Path) -> None:
    report = tmp_path / "run.json"
    ro.run(count_pipeline(), [1, 3], report=str(report), progress=False)
    command = [sys.executable, "-m", "rayorch_cpp", "report", str(report)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "<h1>Run report</h1>" in (tmp_path / "run.html").read_text()
    broken = tmp_path / "broken.json"
    text = json.loads(report.read_text())
    text["calls"][0]["busy_seconds"] = "slow"
    broken.write_text(json.dumps(text))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rayorch_cpp",
            "report",
            str(broken),
            "-o",
            str(tmp_path / "b.html"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "calls[0].busy_seconds must be a number" in done.stderr
    assert not (tmp_path / "b.html").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PORT = 0
PAGES: list[str] = []


class ReadPage:
    """Fetches the live page at every call (one row per call, one actor)."""

    def run(self, xs: list[int]) -> list[int]:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/", timeout=10) as response:
            PAGES.append(response.read().decode())
        return xs


CALLED: list[int] = []


class Note:
    """Notes the rows it was called with."""

    def run(self, xs: list[int]) -> list[int]:
        CALLED.extend(xs)
        return xs


def note_pipeline() -> Any:
    note = ro.RayModule(Note).ray_options(replicas=1, batch_size=1)
    return lambda x: note(x)


def read_page_pipeline() -> Any:
    read = ro.RayModule(ReadPage).ray_options(replicas=1, batch_size=1)
    return lambda x: read(x)


def test_the_live_page_follows_the_run_and_is_gone_after_it(
    capfd: pytest.CaptureFixture[str],
) -> None:
    global PORT
    PORT = _free_port()
    PAGES.clear()
    with ro.Executor(read_page_pipeline(), live=PORT) as executor:
        result = executor.run([1, 2, 3], progress=False)
    assert result.outputs == [1, 2, 3]
    assert f"live page: http://127.0.0.1:{PORT}/" in capfd.readouterr().err
    assert [("<h1>Live run</h1>" in p) for p in PAGES] == [True, True, True]
    # One actor, one row per call: each call runs after the row before it was delivered.
    for delivered, page in enumerate(PAGES):
        assert f"{delivered} of 3 parents delivered" in page
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{PORT}/", timeout=5)


@pytest.mark.parametrize(
    ("live", "error", "says"),
    [
        ("host:port", ValueError, "live takes True, a port"),
        (70000, ValueError, "the port must be 0"),
        (1.5, TypeError, "not float"),
        ("not-an-ip:0", ValueError, "'not-an-ip' is not an IPv4 address"),
    ],
)
def test_a_bad_live_address_is_refused_before_anything_runs(
    live: object, error: type[Exception], says: str
) -> None:
    CALLED.clear()
    with ro.Executor(note_pipeline()) as executor:
        with pytest.raises(error, match=says):
            executor.run([1], progress=False, live=live)  # type: ignore[arg-type]
        assert CALLED == []
        assert executor.run([5], progress=False).outputs == [5]
    assert CALLED == [5]
