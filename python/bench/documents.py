"""The simulated document workload of `rayorch bench` (bench/workload.h) from Python.

    .venv/bin/python python/bench/documents.py [--docs 368] [--cpp]
    unshare --net sh -c 'ip link set lo up && exec .venv-peers/bin/python \
        python/bench/documents.py --reference'


render (4 actors, 0.5 ms/page) -> expand -> ocr (8 actors, batch 32, 30 ms/batch +
0.5 ms/page) -> reduce -> assemble (2 actors, 2 ms + 0.02 ms/page); costs are sleeps, so the
UDFs release the GIL. A seeded log-normal corpus (median 6 pages, sigma 1.5, clipped to
[1, 427], the largest document 427 pages). Prints end-to-end and time-to-first-document
seconds (the Executor is built before the clock starts), with Python UDFs, and with the same
stages as C++ UDFs (CppModule) when --cpp is given.

With --reference, the same Pipeline (same classes, same options) runs on the reference
implementation (`rayorch` 0.1.1 on Ray 2.60, installed in .venv-peers by
bench/peers/setup.sh) instead: only the import differs. Run it in a private network
namespace that has only loopback (as above, as root); the script checks that every Ray node
is on 127.0.0.1. The reference returns all outputs at the end of run(), so its first
document arrives with the last.
"""

from __future__ import annotations

import argparse
import importlib
import math
import random
import sys
import time
from typing import Any

# The engine under test: this package, or the reference with --reference (same API).
ro: Any = importlib.import_module("rayorch" if "--reference" in sys.argv else "rayorch_cpp")
F: Any = ro.F


def corpus(
    documents: int, seed: int = 4, median: float = 6.0, sigma: float = 1.5, max_pages: int = 427
) -> list[int]:
    rng = random.Random(seed)
    pages = [
        max(1, min(max_pages, round(math.exp(math.log(median) + sigma * rng.gauss(0, 1)))))
        for _ in range(documents)
    ]
    pages[max(range(documents), key=pages.__getitem__)] = max_pages
    return pages


def sleep_ms(ms: float) -> None:
    if ms > 0:
        time.sleep(ms / 1000.0)


class Render:
    def run(self, docs: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
        out = []
        for doc, n in docs:
            sleep_ms(0.5 * n)
            out.append([(doc, i) for i in range(n)])
        return out


class Ocr:
    def run(self, pages: list[tuple[int, int]]) -> list[int]:
        sleep_ms(30.0 + 0.5 * len(pages))
        return [doc * 1_000_000 + i for doc, i in pages]


class Assemble:
    def run(self, values: list[list[int]], docs: list[tuple[int, int]]) -> list[Any]:
        out = []
        for v, (doc, _) in zip(values, docs):
            sleep_ms(2.0 + 0.02 * len(v))
            out.append((doc, v))
        return out


class PythonDocuments(ro.Pipeline):  # type: ignore[misc]
    def __init__(self) -> None:
        self.render = ro.RayModule(Render).ray_options(replicas=4, batch_size=1)
        self.ocr = ro.RayModule(Ocr).ray_options(replicas=8, batch_size=32)
        self.assemble = ro.RayModule(Assemble).ray_options(replicas=2, batch_size=1)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.assemble(F.reduce(self.ocr(F.expand(self.render(doc)))), doc)


class CppDocuments(ro.Pipeline):  # type: ignore[misc]
    def __init__(self) -> None:
        self.render = ro.CppModule("SimRender", replicas=4, batch_size=1).pre_init(0.5)
        self.ocr = ro.CppModule("SimOcr", replicas=8, batch_size=32).pre_init(30.0, 0.5)
        self.assemble = ro.CppModule("SimAssemble", replicas=2, batch_size=1).pre_init(2.0, 0.02)

    def forward(self, doc: ro.Port) -> ro.Port:
        return self.assemble(F.reduce(self.ocr(F.expand(self.render(doc)))), doc)


def measure(name: str, pipeline: Any, docs: list[tuple[int, int]]) -> None:
    with ro.Executor(pipeline) as ex:
        start = time.perf_counter()
        result = ex.run(docs, progress=False)
        e2e = time.perf_counter() - start
    report(name, docs, result.outputs, result.calls, e2e, min(result.root_completed_s))


def measure_reference(docs: list[tuple[int, int]]) -> None:
    import socket

    # Ray binds the machine's external address by default: start it only in a private
    # network namespace whose one interface is loopback.
    interfaces = sorted(name for _, name in socket.if_nameindex())
    if interfaces != ["lo"]:
        raise SystemExit(
            f"refusing to start Ray with network interfaces {interfaces}: run this under "
            "unshare --net sh -c 'ip link set lo up && exec ...' (as root)"
        )
    import ray

    # Logical CPUs for the 14 actors (4 + 8 + 2); the stages only sleep.
    ex = ro.Executor(
        PythonDocuments(),
        ray_init_kwargs={"num_cpus": 14, "include_dashboard": False, "logging_level": "ERROR"},
    )
    addresses = sorted({node["NodeManagerAddress"] for node in ray.nodes()})
    if addresses != ["127.0.0.1"]:
        raise SystemExit(f"a Ray node is not on loopback: {addresses}")
    try:
        start = time.perf_counter()
        result = ex.run(docs)
        e2e = time.perf_counter() - start
    finally:
        ex.close()
        ray.shutdown()
    # No streaming: every output is returned when the last one is done.
    report(f"reference {ro.__version__}", docs, list(result.outputs), result.calls, e2e, e2e)


def report(
    name: str, docs: list[tuple[int, int]], outputs: Any, calls: Any, e2e: float, first: float
) -> None:
    pages = sum(n for _, n in docs)
    assert all(
        out == (d, [d * 1_000_000 + i for i in range(n)]) for out, (d, n) in zip(outputs, docs)
    )
    ocr = next(c for c in calls if c.udf_name in ("Ocr", "SimOcr"))
    print(
        f"{name:<14} {len(docs):>4} docs {pages:>6} pages  end-to-end {e2e:6.3f} s  "
        f"first document {first:6.3f} s  {pages / e2e:7.0f} pages/s  "
        f"OCR RPCs {ocr.rpcs} (mean batch {ocr.average_batch:.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=368)
    parser.add_argument("--cpp", action="store_true", help="also run the C++ UDF version")
    parser.add_argument(
        "--reference", action="store_true", help="run on the reference implementation instead"
    )
    a = parser.parse_args()
    docs = list(enumerate(corpus(a.docs)))
    if a.reference:
        measure_reference(docs)
        return
    measure("Python UDFs", PythonDocuments(), docs)
    if a.cpp:
        measure("C++ UDFs", CppDocuments(), docs)


if __name__ == "__main__":
    main()
