"""The UDFs and pipelines that test_process_workers.py runs, on threads and in worker
processes (isolation="process"). The workers unpickle these classes by reference: they import
this module by name, from the driver's sys.path."""

from __future__ import annotations

import ctypes
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import rayorch_cpp as ro
from rayorch_cpp import F


class Where:
    """x -> (x * x, worker pid, replica index)."""

    def __init__(self) -> None:
        context = ro.replica_context()
        self.index = context.index if context is not None else -1

    def run(self, xs: list[int]) -> list[tuple[int, int, int]]:
        time.sleep(0.002)  # lets every replica take batches
        return [(x * x, os.getpid(), self.index) for x in xs]


class Split:
    """n -> [0, .., n-1] (an expanded output crosses as a list)."""

    def run(self, xs: list[int]) -> list[list[int]]:
        return [list(range(x)) for x in xs]


class Plus:
    def __init__(self, k: int) -> None:
        self.k = k

    def run(self, xs: list[int]) -> list[int]:
        return [x + self.k for x in xs]


class Total:
    def run(self, groups: list[list[int]]) -> list[int]:
        return [sum(g) for g in groups]


class Culprit:
    """Ends its worker on row `bad` in the way `how` names; other rows pass through."""

    def __init__(self, how: str, bad: int) -> None:
        self.how, self.bad = how, bad

    def run(self, xs: list[int]) -> list[int]:
        for x in xs:
            if x != self.bad:
                continue
            sys.stderr.write(f"row {x} ends this worker ({self.how})\n")
            sys.stderr.flush()
            if self.how == "segfault":
                ctypes.string_at(0)
            elif self.how == "abort":
                os.abort()
            elif self.how == "exit":
                os._exit(3)
            elif self.how == "memory":
                bytearray(4 << 30)
            elif self.how == "hang":
                time.sleep(600)
        return [x * 10 for x in xs]


class BrokenConstructor:
    def __init__(self, how: str) -> None:
        if how == "raise":
            raise ValueError("no model file")
        ctypes.string_at(0)

    def run(self, xs: list[int]) -> list[int]:
        return xs


def mapping_of(array: np.ndarray) -> str:
    """The name of the mapping that holds an array's data in this process (/proc/self/maps):
    "rayorch-worker-arena" for the memory a worker shares with the executor, else "private"."""
    address = array.__array_interface__["data"][0]
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if start <= address < end:
                name = " ".join(fields[5:])
                return "rayorch-worker-arena" if "rayorch-worker-arena" in name else "private"
    return "private"


class ArrayFacts:
    """What a received array is: writable?, the object under it, its bytes, its mean, the
    mapping that holds its data; and an echo."""

    def run(self, arrays: list[np.ndarray]) -> list[tuple[bool, str, int, float, str, np.ndarray]]:
        out = []
        for a in arrays:
            base: Any = a
            while isinstance(base, np.ndarray) and base.base is not None:
                base = base.base
            facts = (a.flags.writeable, type(base).__name__, memoryview(base).nbytes)
            out.append((*facts, float(a.mean()), mapping_of(a), a))
        return out


class Layout:
    """What a received value is: its type, the type of the object under the value the
    worker decoded (the UDF gets a read-only view of it, python_udf.cc), its dtype (as numpy
    writes it, with its fields and metadata), shape, whether it is Fortran-ordered."""

    def run(self, values: list[Any]) -> list[tuple[Any, ...]]:
        out = []
        for a in values:
            decoded = a.base
            metadata = a.dtype.metadata
            dtype = (a.dtype.str, a.dtype.descr, dict(metadata or {}) or None)
            fortran = a.flags.f_contiguous and not a.flags.c_contiguous
            out.append((type(a).__name__, type(decoded.base).__name__, dtype, a.shape, fortran))
        return out


class Echo:
    """Each value back as it came."""

    def run(self, values: list[Any]) -> list[Any]:
        return values


class Tagged(np.ndarray):
    """A subclass of numpy.ndarray: it crosses pickled, as itself."""


class KeepInputs:
    """Keeps every input array it is given; per call, the sums of all it kept so far and the
    mapping that holds each one's data."""

    def __init__(self) -> None:
        self.kept: list[np.ndarray] = []

    def run(self, arrays: list[np.ndarray]) -> list[tuple[list[int], list[str]]]:
        out = []
        for a in arrays:
            self.kept.append(a)
            out.append(([int(k.sum()) for k in self.kept], [mapping_of(k) for k in self.kept]))
        return out


def squares(replicas: int, isolation: str | None) -> Any:
    options: dict[str, Any] = {"replicas": replicas, "batch_size": 2}
    if isolation is not None:
        options["isolation"] = isolation
    where = ro.Module(Where).ray_options(**options)
    return lambda x: where(x)


def hierarchy(isolation: str) -> Any:
    split = ro.Module(Split).ray_options(isolation=isolation)
    plus = ro.Module(Plus).pre_init(5).ray_options(isolation=isolation, replicas=2, batch_size=3)
    total = ro.Module(Total).ray_options(isolation=isolation)
    return lambda n: total(F.reduce(plus(F.expand(split(n)))))


class Devices:
    def run(self, xs: list[int]) -> list[tuple[str, tuple[str, ...]]]:
        context = ro.replica_context()
        assert context is not None
        return [(os.environ.get("CUDA_VISIBLE_DEVICES", "-"), context.devices) for _ in xs]


class PageFacts:
    """A C++ PageImage that crossed into this worker (through its Codec), and back."""

    def run(self, pages: list[Any]) -> list[tuple[int, int, int, int, Any]]:
        return [(p.number, p.width, p.height, sum(p.pixels) % 65521, p) for p in pages]


def rendered_pages(isolation: str) -> Any:
    open_pdf = ro.CppModule("Pdf2mdOpen")
    render = ro.CppModule("Pdf2mdRender").pre_init(50).ray_options(isolation=isolation)
    facts = ro.Module(PageFacts).ray_options(isolation=isolation)

    def forward(path: ro.Port) -> ro.Port:
        refs, _ = open_pdf(path)
        page = F.expand(refs)
        return F.reduce(facts(render(F.broadcast(path, like=page), page)))

    return forward


class Descriptors:
    def run(self, xs: list[int]) -> list[list[str]]:
        fds = Path("/proc/self/fd")
        targets = []
        for fd in fds.iterdir():
            try:
                targets.append(os.readlink(fd))
            except OSError:
                continue  # the directory's own descriptor, closed by now
        return [sorted(targets) for _ in xs]
