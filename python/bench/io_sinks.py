"""What the readers and sinks of rayorch_cpp.io cost (BENCHMARKS.md, "What does writing
through a sink cost?").

  python python/bench/io_sinks.py cost [--rows 200000] [--repeats 3]
      A no-op pipeline (one Module returning its input as a record) over a JSON-lines
      manifest: the run alone (outputs kept in memory), the run with a journal (what a
      sink's exactly-once needs, without the sink), the run then one write of every
      record at the end (JSON lines, and Parquet with pyarrow), and the run through a
      JsonlSink and a ParquetSink (parts committed with a journal). Prints seconds and the
      cost per root of each sink over the run alone.
  python python/bench/io_sinks.py memory [--rows 10000000]
      Peak RSS of a run that streams a manifest of that many rows through the no-op
      pipeline into a JsonlSink, each size in its own process (compare 100000 and
      10000000).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import rayorch_cpp as ro
from rayorch_cpp.io import JsonlSink, ParquetSink, read_jsonl


class Record:
    def __call__(self, docs: list[int]) -> list[dict[str, Any]]:
        return [{"doc": d, "text": "x" * 32} for d in docs]


class NoOp(ro.Pipeline):
    def __init__(self) -> None:
        self.record = ro.Module(Record, batch_size=1024)

    def forward(self, doc: ro.Port) -> Any:
        return self.record(doc)


def manifest(path: Path, rows: int) -> Path:
    with open(path, "w") as f:
        for d in range(rows):
            f.write(f'{{"doc": {d}}}\n')
    return path


def fsync_write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def cost(rows: int, repeats: int) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    work = Path(tempfile.mkdtemp(prefix="io-bench-"))
    m = manifest(work / "m.jsonl", rows)

    def parquet_at_end(got: list[Any], path: str) -> None:
        with open(path, "wb") as f:
            pq.write_table(pa.Table.from_pylist(got), f)
            f.flush()
            os.fsync(f.fileno())

    # Per arm: (keep a journal, the sink of the run, what is written once the run returned).
    Arm = tuple[bool, Any, Any]
    plan: dict[str, Arm] = {
        "run": (False, None, None),
        "run+journal": (True, None, None),
        "run+jsonl at end": (
            False,
            None,
            lambda got, out: fsync_write(
                Path(f"{out}.jsonl"), "".join(json.dumps(o) + "\n" for o in got).encode()
            ),
        ),
        "run+parquet at end": (False, None, lambda got, out: parquet_at_end(got, f"{out}.parquet")),
        "JsonlSink": (True, JsonlSink, None),
        "ParquetSink": (True, ParquetSink, None),
    }
    arms: dict[str, list[float]] = {arm: [] for arm in plan}
    with ro.Executor(NoOp()) as ex:
        for r in range(repeats):
            for arm, (journal, sink, at_end) in plan.items():
                out = work / f"{arm.replace(' ', '_').replace('+', '_')}-{r}"
                began = time.perf_counter()
                result = ex.run(
                    read_jsonl(m),
                    input_batch_size=4096,
                    progress=False,
                    journal=f"{out}.journal" if journal else None,
                    sink=sink(directory=out) if sink is not None else None,
                )
                if at_end is not None:
                    at_end(result.outputs, out)
                arms[arm].append(time.perf_counter() - began)
    best = {arm: min(t) for arm, t in arms.items()}
    per_root = {arm: (best[arm] - best["run"]) / rows * 1e6 for arm in arms if arm != "run"}
    return {
        "rows": rows,
        "repeats": repeats,
        "best_s": best,
        "us_per_root_over_run": per_root,
        "loadavg_1min": os.getloadavg()[0],
        "cpus": os.cpu_count(),
    }


def memory_child(rows: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="io-mem-"))
    m = manifest(work / "m.jsonl", rows)
    began = time.perf_counter()
    with ro.Executor(NoOp()) as ex:
        ex.run(
            read_jsonl(m),
            input_batch_size=4096,
            progress=False,
            sink=JsonlSink(directory=work / "out"),
            journal=work / "run.journal",
        )
    elapsed = time.perf_counter() - began
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        json.dumps(
            {
                "rows": rows,
                "peak_rss_bytes": peak,
                "seconds": elapsed,
                "manifest_bytes": m.stat().st_size,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("cost")
    c.add_argument("--rows", type=int, default=200_000)
    c.add_argument("--repeats", type=int, default=3)
    mem = sub.add_parser("memory")
    mem.add_argument("--rows", type=int, nargs="+", default=[100_000, 10_000_000])
    child = sub.add_parser("memory-child")
    child.add_argument("--rows", type=int, required=True)
    args = parser.parse_args()
    if args.command == "cost":
        print(json.dumps(cost(args.rows, args.repeats), indent=1))
    elif args.command == "memory-child":
        memory_child(args.rows)
    else:
        for rows in args.rows:
            out = subprocess.run(
                [sys.executable, __file__, "memory-child", "--rows", str(rows)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            print(out.strip(), flush=True)


if __name__ == "__main__":
    main()
