"""A pytest plugin for the run of the Ray cases (cases_ray_*.py) inside the private namespace:
it writes each case's outcome and message to the JSON file named by RAYORCH_CASE_RESULTS, so
that test_ray.py can report every case as its own test.

The file holds {"collected": [case id, ...], "cases": {case id: {"outcome", "message"}}}, where
a case id is the node id after "::" (a function name, with its parameters in brackets). A
case's outcome is the worst of its setup, call and teardown: failed, then skipped, then passed;
a failure in setup or teardown (the cluster fixture's checks) names its phase."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

RANK = {"passed": 0, "skipped": 1, "failed": 2}


def case_id(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


def skip_reason(report: pytest.TestReport) -> str:
    # A skip's longrepr is (path, line, "Skipped: reason").
    longrepr: Any = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return report.longreprtext


class CaseResults:
    """Collects the outcome of every case of one run and writes them to `path` at its end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.collected: list[str] = []
        self.cases: dict[str, dict[str, str]] = {}

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected.extend(case_id(item.nodeid) for item in session.items)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.cases.setdefault(case_id(report.nodeid), {"outcome": "passed", "message": ""})
        if report.passed:
            return
        outcome = "skipped" if report.skipped else "failed"
        if outcome == "skipped":
            message = skip_reason(report)
        else:
            phase = "" if report.when == "call" else f"in {report.when}: "
            message = phase + report.longreprtext
        if RANK[outcome] > RANK[entry["outcome"]]:
            entry["outcome"], entry["message"] = outcome, message
        elif outcome == entry["outcome"] == "failed":
            entry["message"] += "\n" + message

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        document = {"collected": self.collected, "cases": self.cases}
        self.path.write_text(json.dumps(document, indent=1))


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.get("RAYORCH_CASE_RESULTS")
    if path:
        config.pluginmanager.register(CaseResults(Path(path)), "rayorch_case_results")
