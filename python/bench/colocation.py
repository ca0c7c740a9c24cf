"""What co-location saves on Ray (DESIGN 5.12): a page-image stage and the stage that reads
each image, apart (two pools), co-located as declared (one pool whose actors hold both) and
as the compiler finds it (no declaration, ``auto_colocate=True``), on a new local Ray in a
loopback-only network namespace, interleaved.

    .venv/bin/python python/bench/colocation.py [--pages 240 --image-mib 6 --replicas 2
        --rounds 3]

The first stage makes a page image of --image-mib MiB (an RGB array, as rendering a page
at 200 dpi gives); the second reads every byte of it (its sum), as detection reads the
page. Printed per arm and round: E2E of the run (actors started and ready before it), pages
per second, the CPU seconds of the actor processes, and how many page images crossed Ray's
object store (the reader's array is a view of the store's shared memory for those, memory of
its own process for the others), with the bytes that is per page."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from loopback_ray import ensure_private_network, start_local_ray
from ocr_pdf import cpu_by_process, cpu_since

import rayorch_cpp as ro


class MakeImage:
    """page -> an RGB image of `mib` MiB whose bytes are all page % 251."""

    def __init__(self, mib: float) -> None:
        self.side = int((mib * (1 << 20) / 3) ** 0.5)

    def run(self, pages: list[int]) -> list[Any]:
        import numpy as np

        return [np.full((self.side, self.side, 3), p % 251, dtype=np.uint8) for p in pages]


def in_object_store(array: Any) -> bool:
    """Whether `array`'s memory is a mapping of Ray's object store (plasma) in this process."""
    address = array.__array_interface__["data"][0]
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            low, high = (int(v, 16) for v in parts[0].split("-"))
            if low <= address < high:
                return "plasma" in " ".join(parts[5:])
    return False


class ReadImage:
    """image -> (its byte sum, whether it is a view of the object store)."""

    def run(self, images: list[Any]) -> list[tuple[int, bool]]:
        return [(int(i.sum(dtype="int64")), in_object_store(i)) for i in images]


ARMS = ("apart", "colocated", "found")


def pipeline(arm: str, replicas: int, mib: float) -> Any:
    """The program of one arm: "apart", "colocated" (declared) or "found" (by the
    compiler)."""
    group = {"colocate": "page"} if arm == "colocated" else {}
    make = ro.Module(MakeImage, replicas=replicas, batch_size=2, **group).pre_init(mib)
    read = ro.Module(ReadImage, replicas=replicas, batch_size=2, **group)
    program = ro.compile(lambda page: read(make(page)), auto_colocate=arm == "found")
    if (len(program.native.pools()) == 1) != (arm != "apart"):
        raise SystemExit(f"arm {arm}: the plan has pools {program.native.pools()}")
    return program


def one_run(arm: str, a: argparse.Namespace) -> dict[str, float]:
    pages = list(range(a.pages))
    with ro.Executor(pipeline(arm, a.replicas, a.image_mib), backend="ray") as ex:
        ex.await_actors()
        before = cpu_by_process(True)
        start = time.monotonic()
        result = ex.run(pages, progress=False)
        wall = time.monotonic() - start
        cpu = cpu_since(before, True)
    side = int((a.image_mib * (1 << 20) / 3) ** 0.5)
    image_bytes = side * side * 3
    for page, (total, _) in zip(pages, result.outputs, strict=True):
        if total != image_bytes * (page % 251):
            raise SystemExit(f"page {page}: wrong sum {total}")
    crossed = sum(1 for _, via_store in result.outputs if via_store)
    return {
        "e2e_s": wall,
        "pages_per_s": a.pages / wall,
        "actor_cpu_s": cpu.get("actors", 0.0),
        "crossed": crossed,
        "mib_per_page": crossed * image_bytes / a.pages / (1 << 20),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", type=int, default=240)
    p.add_argument("--image-mib", type=float, default=6.0)
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    ensure_private_network(__file__)  # re-executes this script there (as root)
    cores = os.cpu_count() or 1
    start_local_ray(max(cores, 2 * a.replicas))
    print(
        f"{a.pages} pages of {a.image_mib:g} MiB, {a.replicas} replicas per stage, {cores} "
        f"cores, load average {os.getloadavg()[0]:.1f}",
        file=sys.stderr,
    )
    runs: dict[str, list[dict[str, float]]] = {arm: [] for arm in ARMS}
    for r in range(a.rounds):
        for arm in ARMS if r % 2 == 0 else reversed(ARMS):
            got = one_run(arm, a)
            runs[arm].append(got)
            print(
                f"round {r} {arm:9s}: E2E {got['e2e_s']:6.2f} s, {got['pages_per_s']:6.1f} "
                f"pages/s, actors {got['actor_cpu_s']:6.2f} CPU-s, images through the object "
                f"store {int(got['crossed'])}/{a.pages} ({got['mib_per_page']:.2f} MiB/page)"
            )
    for arm, got in runs.items():
        e2e = statistics.median(g["e2e_s"] for g in got)
        cpu = statistics.median(g["actor_cpu_s"] for g in got)
        moved = statistics.median(g["mib_per_page"] for g in got)
        print(
            f"{arm:9s} median: E2E {e2e:.2f} s, actors {cpu:.2f} CPU-s, {moved:.2f} MiB/page "
            "through the object store"
        )
    apart = statistics.median(g["e2e_s"] for g in runs["apart"])
    for arm in ARMS[1:]:
        ratio = statistics.median(g["e2e_s"] for g in runs[arm]) / apart
        print(f"{arm} / apart E2E: {ratio:.3f}x")


if __name__ == "__main__":
    main()
