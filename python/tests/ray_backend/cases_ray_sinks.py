"""Sinks on the Ray backend (docs/IO.md: the sink runs in the driver process, where results are
delivered): a driver killed with SIGKILL while it writes a JsonlSink resumes on the same
cluster from its journal, and every present root is then in exactly one committed part, with
the local executor's values. Run only through test_ray.py (ray_cluster.py starts the
cluster)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import ray_udfs as u
from ray_cluster import local, on_ray, run_killed_driver

from rayorch_cpp.io import JsonlSink, read_manifest

MANY = list(range(1, 61))  # enough parts to kill the driver between two


def committed_values(out: Path) -> list[Any]:
    values = []
    for name in read_manifest(out).parts:
        values.extend(json.loads(line)["value"] for line in (out / name).read_text().splitlines())
    return values


def test_a_driver_killed_while_writing_a_sink_resumes_with_each_root_once(
    cluster: Any, tmp_path: Path
) -> None:
    out, journal = tmp_path / "out", tmp_path / "run.journal"
    # Killed once the sink committed a part (a part file is in place) and the run goes on.
    code = (
        "import os, signal\n"
        "import rayorch_cpp as ro, ray_udfs as u\n"
        "from rayorch_cpp.io import JsonlSink\n"
        "from ray_cluster import assert_on_loopback\n"
        f"out = {str(out)!r}\n"
        "def progress(done: int, total: int) -> None:\n"
        "    if any(n.startswith('part-') and n.endswith('.jsonl') for n in os.listdir(out)):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "pipeline = u.documents(ocr_args=(0.05,))\n"
        f"with ro.Executor(pipeline, backend='ray', address={cluster.address!r}) as ex:\n"
        "    assert_on_loopback()\n"
        f"    ex.run({MANY!r}, sink=JsonlSink(directory=out, rows_per_part=4),\n"
        f"           journal={str(journal)!r}, progress=progress)\n"
        "print('not killed')\n"
    )
    run_killed_driver(code)
    expected = local(u.documents(ocr_args=(0.05,)), MANY)
    with on_ray(u.documents(ocr_args=(0.05,))) as ex:
        resumed = ex.run(
            MANY,
            sink=JsonlSink(directory=out, rows_per_part=4),
            journal=journal,
            progress=False,
        )
    assert 0 < resumed.roots_restored < len(MANY), resumed.roots_restored
    present = sorted(v for v in expected if isinstance(v, str))
    assert sorted(committed_values(out)) == present
    assert read_manifest(out).complete
    assert sorted(os.listdir(out)) == sorted(
        [*read_manifest(out).parts, "_manifest.json", "_SUCCESS"]
    )
