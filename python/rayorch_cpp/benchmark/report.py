"""A benchmark run's report: its configuration, metrics, resource profile, the paths of its
artifacts and, optionally, its outputs; written to and read from JSON."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _json_default(value: Any) -> Any:
    """What JSON cannot hold as it is: a dataclass as its fields, anything else as text (a
    failed row's OutputIssue, say)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return str(value)


@dataclass(frozen=True, slots=True)
class BenchmarkReport:
    """What one benchmark run measured (``summary.json`` of its run folder)."""

    benchmark: str
    run_id: str
    config: dict[str, Any]
    metrics: dict[str, Any]
    profile: dict[str, Any]
    artifacts: dict[str, str]
    outputs: object | None = field(default=None, repr=False)

    @property
    def elapsed_s(self) -> float:
        """The run's measured wall time (``metrics["measured_wall_s"]``)."""
        return float(self.metrics["measured_wall_s"])

    def to_dict(
        self, *, include_outputs: bool = False, include_samples: bool = True
    ) -> dict[str, Any]:
        profile = dict(self.profile)
        if not include_samples:
            profile.pop("samples", None)
        out: dict[str, Any] = {
            "benchmark": self.benchmark,
            "run_id": self.run_id,
            "config": self.config,
            "metrics": self.metrics,
            "profile": profile,
            "artifacts": self.artifacts,
        }
        if include_outputs:
            out["outputs"] = self.outputs
        return out

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> BenchmarkReport:
        return cls(
            benchmark=value["benchmark"],
            run_id=value["run_id"],
            config=dict(value["config"]),
            metrics=dict(value["metrics"]),
            profile=dict(value["profile"]),
            artifacts=dict(value["artifacts"]),
            outputs=value.get("outputs"),
        )

    def write_json(
        self, path: str | Path, *, include_outputs: bool = False, include_samples: bool = True
    ) -> Path:
        """Writes the report as JSON (parents created); returns the path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        document = self.to_dict(include_outputs=include_outputs, include_samples=include_samples)
        target.write_text(
            json.dumps(document, ensure_ascii=False, indent=2, default=_json_default) + "\n",
            encoding="utf-8",
        )
        return target

    def print_summary(self) -> None:
        document = self.to_dict(include_samples=False)
        print(json.dumps(document, ensure_ascii=False, indent=2, default=_json_default))
