"""Manifest in, shards out: rows/s of a no-op pipeline that reads a Parquet manifest and writes
Parquet shards, this project (read_parquet -> one Module -> ParquetSink with a journal, on the
local executor and on Ray) against Ray Data (read_parquet -> map_batches -> write_parquet), on
the same rows on the same machine (BENCHMARKS.md, "What does writing through a sink cost?").

  python python/bench/io_peers.py [--rows 1000000] [--cpus 2] [--repeats 3]

Each arm runs in its own process; Ray runs in a private loopback-only network namespace (as
root; the script re-executes itself there). Ray Data comes from .venv-peers
(bench/peers/setup.sh). Every arm's output is read back and checked to hold every row once.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from loopback_ray import ensure_private_network

ROOT = Path(__file__).resolve().parents[2]

THIS = """
import sys, time, rayorch_cpp as ro
from rayorch_cpp.io import ParquetSink, read_parquet
class Record:
    def __call__(self, docs):
        return [{"doc": d, "text": "x" * 32} for d in docs]
class NoOp(ro.Pipeline):
    def __init__(self):
        self.record = ro.Module(Record, batch_size=1024, replicas=int(sys.argv[4]))
    def forward(self, doc):
        return self.record(doc)
backend = sys.argv[3]
kwargs = {}
if backend == "ray":
    sys.path.insert(0, sys.argv[5])
    from loopback_ray import start_local_ray
    start_local_ray(int(sys.argv[4]))
    kwargs = {"backend": "ray"}
began = time.perf_counter()
with ro.Executor(NoOp(), **kwargs) as ex:
    ex.run(read_parquet(sys.argv[1]), input_batch_size=8192, max_active_input_batches=2,
           sink=ParquetSink(directory=sys.argv[2]), journal=sys.argv[2] + ".journal",
           progress=False)
print(time.perf_counter() - began)
"""

RAY_DATA = """
import sys, time
sys.path.insert(0, sys.argv[4])
from loopback_ray import start_local_ray
ray = start_local_ray(int(sys.argv[3]))
import ray.data
def record(batch):
    return {"doc": batch["doc"], "text": ["x" * 32] * len(batch["doc"])}
began = time.perf_counter()
ray.data.read_parquet(sys.argv[1]).map_batches(record, batch_size=1024).write_parquet(sys.argv[2])
print(time.perf_counter() - began)
"""


def rows_in(directory: Path) -> int:
    import pyarrow.parquet as pq

    files = sorted(p for p in directory.rglob("*.parquet"))
    docs: list[int] = []
    for f in files:
        docs.extend(pq.read_table(f, columns=["doc"]).column("doc").to_pylist())
    if sorted(docs) != list(range(len(docs))):
        raise SystemExit(f"{directory}: the rows are not each doc once")
    return len(docs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--cpus", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--peers-python", type=Path, default=ROOT / ".venv-peers" / "bin" / "python")
    a = p.parse_args()
    ensure_private_network(__file__)
    import pyarrow as pa
    import pyarrow.parquet as pq

    work = Path(tempfile.mkdtemp(prefix="io-peers-"))
    manifest = work / "manifest.parquet"
    pq.write_table(pa.table({"doc": list(range(a.rows))}), manifest, row_group_size=65536)
    bench = str(Path(__file__).resolve().parent)
    arms = {
        "this project, local": [
            sys.executable,
            "-c",
            THIS,
            str(manifest),
            "",
            "local",
            str(a.cpus),
            bench,
        ],
        "this project, Ray": [
            sys.executable,
            "-c",
            THIS,
            str(manifest),
            "",
            "ray",
            str(a.cpus),
            bench,
        ],
        "Ray Data": [str(a.peers_python), "-c", RAY_DATA, str(manifest), "", str(a.cpus), bench],
    }
    seconds: dict[str, list[float]] = {arm: [] for arm in arms}
    for r in range(a.repeats):
        for arm, command in arms.items():
            out = work / f"out-{r}-{arm.replace(' ', '_').replace(',', '')}"
            command = [out.as_posix() if c == "" else c for c in command]
            done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                raise SystemExit(f"{arm} failed:\n{done.stderr[-3000:]}")
            seconds[arm].append(float(done.stdout.strip().splitlines()[-1]))
            if rows_in(out) != a.rows:
                raise SystemExit(f"{arm}: {rows_in(out)} rows written of {a.rows}")
            shutil.rmtree(out)
            print(f"{arm} run {r + 1}: {seconds[arm][-1]:.2f} s", file=sys.stderr, flush=True)
    best = {arm: min(s) for arm, s in seconds.items()}
    print(
        json.dumps(
            {
                "rows": a.rows,
                "cpus": a.cpus,
                "repeats": a.repeats,
                "seconds": seconds,
                "rows_per_second_best": {arm: a.rows / s for arm, s in best.items()},
                "loadavg_1min": os.getloadavg()[0],
            },
            indent=1,
        )
    )
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
