"""Jobs on the Ray backend (docs/JOBS.md): ``python -m rayorch_cpp run`` of the same pipeline,
configuration and manifest writes the same records on the suite's cluster as on the local
backend, and its run folder says it ran there. Run only through test_ray.py (ray_cluster.py
starts the cluster)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rayorch_cpp.__main__ import main
from rayorch_cpp.io import read_manifest


def records(out: Path) -> list[str]:
    """The committed records of a job's output, sorted (parts hold them in delivery order)."""
    lines = []
    for name in read_manifest(out).parts:
        lines += (out / name).read_text().splitlines()
    return sorted(lines)


def test_a_job_writes_the_same_records_on_ray_as_locally(cluster: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "docs.jsonl"
    with manifest.open("w") as f:
        for i in range(30):
            text: Any = " ".join(f"w{j % 5}" for j in range(i * 7)) if i != 11 else 11
            f.write(json.dumps({"id": f"doc{i}", "text": text}) + "\n")
    common = ["run", "job_chunks:Chunks", "--input", str(manifest), "--no-progress", "-q"]
    common += ["--set", "chunk_words=6", "--set", "count.replicas=2", "--set", "split.num_cpus=0.5"]
    assert main([*common, "-o", str(tmp_path / "local")]) == 1  # doc11 fails on both
    assert main([*common, "-o", str(tmp_path / "ray"), "--backend", "ray"]) == 1
    assert records(tmp_path / "ray") == records(tmp_path / "local")
    assert len(records(tmp_path / "local")) == 29
    for backend in ("local", "ray"):
        run = tmp_path / backend / "_run"
        config = json.loads((run / "config.json").read_text())
        assert config["backend"]["name"] == backend
        assert config["stages"]["count"]["replicas"] == 2
        summary = json.loads((run / "summary.json").read_text())
        assert (summary["written"], summary["failed"], summary["exit_code"]) == (29, 1, 1)
        failures = [json.loads(line) for line in (run / "failures.jsonl").read_text().splitlines()]
        assert [f["row"] for f in failures] == [11]
        assert (run / "report.html").is_file()
