"""A Python sink across SIGKILL (docs/IO.md): a child process runs the three-level pipeline of
sink_pipeline.py (expand, expand, filter, reduce, reduce) from a JSON-lines manifest into a
JsonlSink with a journal and is killed at a random moment (while staging, between a rename and
its journal record, during a resume), then resumed until a run finishes. Every present root is
then in exactly one committed part, equal to an uninterrupted run, the directory holds only
committed parts and the manifest, and the last run's dead letters name each failed document
once. On threads and with every Module in worker processes. The seed is printed;
RAYORCH_TEST_SEED replays it."""

from __future__ import annotations

import json
import os
import random
import signal
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

import sink_pipeline as sp
from rayorch_cpp.io import read_manifest

TESTS = Path(__file__).resolve().parents[1]
DOCS = list(range(40))
POINTS = 20


def start(out: Path, journal: Path, manifest: Path, isolation: str) -> subprocess.Popen[str]:
    env = dict(os.environ, SINK_PIPELINE_SLEEP_S="0.004")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), env.get("PYTHONPATH")) if p)
    child = subprocess.Popen(
        [sys.executable, str(TESTS / "sink_pipeline.py"), str(out), str(journal), str(manifest)]
        + [isolation],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line == "RUNNING\n", (line, child.stderr.read() if child.stderr else "")
    return child


def journal_state(path: Path) -> tuple[set[str], set[str]]:
    """The parts the journal holds committed (a part record and all its root records) and
    those it holds an intent for without that (docs/JOURNAL.md: the file format)."""
    data = path.read_bytes() if path.exists() else b""
    committed: set[str] = set()
    intents: set[str] = set()
    at, group, part = 0, 0, ""
    while at + 8 <= len(data):
        length, checksum = struct.unpack_from("<II", data, at)
        payload = data[at + 8 : at + 8 + length]
        if length == 0 or len(payload) < length or zlib.crc32(payload) != checksum:
            break
        kind = payload[:1]
        if kind in (b"I", b"P"):
            (size,) = struct.unpack_from("<Q", payload, 1)
            name = payload[9 : 9 + size].decode()
            if kind == b"I":
                intents.add(name)
            else:
                (group,) = struct.unpack_from("<Q", payload, 9 + size + 8)
                part = name
        elif kind == b"R" and group > 0:
            group -= 1
            if group == 0:
                committed.add(part)
        at += 8 + length
    return committed, intents - committed


def read_parts(out: Path) -> list[dict[str, Any]]:
    rows = []
    for name in read_manifest(out).parts:
        rows.extend(json.loads(line) for line in (out / name).read_text().splitlines())
    return rows


@pytest.mark.parametrize("isolation", ["", "process"])
def test_every_root_is_in_one_committed_part_after_kills(tmp_path: Path, isolation: str) -> None:
    seed = int(os.environ.get("RAYORCH_TEST_SEED", random.randrange(1 << 30)))
    print(f"seed {seed} (RAYORCH_TEST_SEED={seed} replays it)")
    rng = random.Random(seed)
    manifest = tmp_path / "docs.jsonl"
    manifest.write_text("".join(json.dumps({"doc": d}) + "\n" for d in DOCS))
    expected = [sp.expected(d) for d in DOCS if sp.expected(d) is not None]

    # How long an uninterrupted run takes once started: the range of the kill delays.
    first = start(tmp_path / "plain", tmp_path / "plain.journal", manifest, isolation)
    began = time.monotonic()
    assert first.wait(120) == 0, first.stderr.read() if first.stderr else ""
    span = time.monotonic() - began
    assert sorted(read_parts(tmp_path / "plain"), key=lambda r: r["doc"]) == expected

    kills = in_resume = staging = after_rename = 0
    for point in range(POINTS):
        out, journal = tmp_path / f"out{point}", tmp_path / f"run{point}.journal"
        where = f"point {point}, seed {seed}"
        for attempt in range(30):
            child = start(out, journal, manifest, isolation)
            try:
                child.wait(rng.uniform(0.0, span) if attempt < 25 else 120)
            except subprocess.TimeoutExpired:
                child.send_signal(signal.SIGKILL)
                child.wait()
            if child.returncode == 0:
                break
            assert child.returncode == -signal.SIGKILL, (where, child.stderr.read())
            kills += 1
            in_resume += attempt > 0
            committed, uncommitted = journal_state(journal)
            names = set(os.listdir(out)) if out.exists() else set()
            staging += any(".rayorch-tmp-" in n for n in names)
            after_rename += bool(uncommitted & names)
        else:
            pytest.fail(f"{where}: no run finished in 30 attempts")
        rows = read_parts(out)
        assert sorted(rows, key=lambda r: r["doc"]) == expected, where  # each exactly once
        assert read_manifest(out).complete, where
        assert sorted(os.listdir(out)) == sorted(
            [*read_manifest(out).parts, "_manifest.json", "_SUCCESS"]
        ), where
        dead = [json.loads(line) for line in Path(f"{out}.dead.jsonl").read_text().splitlines()]
        assert sorted(d["row"] for d in dead) == [d for d in DOCS if d % 13 == 7], where
    print(
        f"{kills} kills: {in_resume} during a resume, {staging} while a part was staged, "
        f"{after_rename} between a rename and its journal record"
    )
    assert kills >= POINTS and in_resume > 0
