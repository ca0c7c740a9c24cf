"""Ray cases: the tail split with an actor that becomes ready late (DESIGN 6.1.8). The plan cuts
calls so that the late actor ends with the other; whatever it cuts, every page is read once
and the documents are exact.

Run only through test_ray.py (ray_cluster.py starts the cluster)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ray_cluster import on_ray
from ray_udfs import late_actor_documents


def test_a_late_actor_joins_the_tail_and_every_page_is_read_once(
    cluster: Any, tmp_path: Path
) -> None:
    docs = list(range(6))
    pipeline = late_actor_documents(str(tmp_path), late_s=2.0)
    with on_ray(pipeline) as ex:
        outputs = ex.run(docs, progress=False).outputs
    expected = [f"{d}:" + "|".join(f"text{d * 100 + i}" for i in range(24)) for d in docs]
    assert [o for o in outputs] == expected
    calls = [line.split() for line in (tmp_path / "calls.log").read_text().splitlines()]
    pages = Counter(int(p) for call in calls for p in call[1:])
    assert sorted(pages) == sorted(d * 100 + i for d in docs for i in range(24))
    assert set(pages.values()) == {1}, "a page read twice"
    assert all(1 <= len(call) - 1 <= 8 for call in calls)
    # The late actor, ready 2 s after the first, joined and read pages.
    assert len({call[0] for call in calls}) == 2, calls


def test_the_benchmarks_ray_arm_with_a_late_actor_starts_its_own_ray_on_loopback(
    cluster: Any, tmp_path: Path
) -> None:
    # bench/peers/rayorch_ray_peer.py (`bench compare`'s rayorch-ray arm) on a small startup
    # regime: one OCR constructor of two loads 2 s. It starts a cluster of its own beside the
    # suite's, in this loopback-only namespace, checks every node is on 127.0.0.1 and says so.
    pages = 20
    corpus = {
        "costs_ms": {
            "render_per_page": 10.0,
            "ocr_per_batch": 300.0,
            "ocr_per_page": 20.0,
            "assemble_per_doc": 10.0,
            "assemble_per_page": 1.0,
        },
        "documents": [{"id": d, "pages": pages} for d in range(6)],
        "input_batch_size": 2,
        "max_active_input_batches": 2,
        "payload": {"max_bytes": 0},
        "startup": {"render_ms": 0.0, "ocr_ms": 0.0, "ocr_slow_every": 2, "ocr_slow_ms": 2000.0},
        "topology": {
            "render_replicas": 2,
            "render_batch": 1,
            "ocr_replicas": 2,
            "ocr_batch": 8,
            "ocr_batch_wait_ms": 0,
            "assemble_replicas": 1,
            "assemble_batch": 1,
            "ray_tasks_in_flight": 0,
            "auto_replicas": False,
            "budget_cpus": 0,
            "peer_defaults": False,
        },
    }
    (tmp_path / "corpus.json").write_text(json.dumps(corpus))
    events = tmp_path / "events"
    events.mkdir()
    script = Path(__file__).resolve().parents[3] / "bench" / "peers" / "rayorch_ray_peer.py"
    command = [sys.executable, str(script), "--corpus", str(tmp_path / "corpus.json")]
    command += ["--out", str(tmp_path / "out.json"), "--events-dir", str(events)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Ray nodes: 1, addresses: 127.0.0.1\n" in done.stderr, done.stderr
    result = json.loads((tmp_path / "out.json").read_text())
    assert result["documents"] == {
        str(d): [d * 1000000 + p for p in range(pages)] for d in range(6)
    }
    actors = result["ocr_actors"]
    assert len(actors) == 2 and all(a["batches"] for a in actors), actors
