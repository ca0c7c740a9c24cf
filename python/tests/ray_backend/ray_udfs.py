"""UDFs and pipelines of the Ray backend tests; importable on every Ray worker (the suite puts
this directory on the workers' PYTHONPATH)."""

from __future__ import annotations

import os
import time
from typing import Any

import rayorch_cpp as ro
from rayorch_cpp import F


def once(marker_dir: str, name: str) -> bool:
    """True the first time any process asks for `name` under `marker_dir` (atomic create)."""
    try:
        fd = os.open(os.path.join(marker_dir, name), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


class Pages:
    """doc n -> its pages [n*100, ..., n*100 + n % 5 - 1] (possibly none)."""

    def run(self, docs: list[int]) -> list[list[int]]:
        return [[d * 100 + i for i in range(d % 5)] for d in docs]


class Ocr:
    """page -> text; RecordFailure on page 903, GroupFailure on page 1302; optional sleep and
    one-time faults (raise, ActorLost, hang) for the page `fault_on`."""

    def __init__(
        self, sleep_s: float = 0.0, fault: str = "", fault_on: int = -1, marker_dir: str = ""
    ) -> None:
        self.sleep_s, self.fault = sleep_s, fault
        self.fault_on, self.marker_dir = fault_on, marker_dir

    def run(self, pages: list[int]) -> list[Any]:
        if self.sleep_s:
            time.sleep(self.sleep_s)
        if self.fault and self.fault_on in pages:
            if self.fault == "raise":
                raise ValueError(f"cannot read page {self.fault_on}")
            if self.fault == "raise_once" and once(self.marker_dir, f"raise-{self.fault_on}"):
                raise ValueError(f"cannot read page {self.fault_on}")
            if self.fault == "lost_once" and once(self.marker_dir, f"lost-{self.fault_on}"):
                raise ro.ActorLost(f"the device went away on page {self.fault_on}")
            if self.fault == "hang_once" and once(self.marker_dir, f"hang-{self.fault_on}"):
                time.sleep(3600)
            if self.fault == "exit_once" and once(self.marker_dir, f"exit-{self.fault_on}"):
                os._exit(1)  # the actor's process dies, with the calls queued behind this one
        out: list[Any] = []
        for p in pages:
            if p == 903:
                out.append(ro.RecordFailure(f"page {p} unreadable"))
            elif p == 1302:
                out.append(ro.GroupFailure(f"page {p} breaks its document"))
            else:
                out.append(f"text{p}")
        return out


class Assemble:
    """(page texts, doc) -> 'doc:text|text|...'."""

    def run(self, groups: list[list[str]], docs: list[int]) -> list[str]:
        return [f"{d}:" + "|".join(g) for g, d in zip(groups, docs)]


class NonEmpty:
    def run(self, texts: list[str]) -> list[bool]:
        return [not t.endswith(":") for t in texts]


class Broken:
    """A UDF whose constructor fails."""

    def __init__(self) -> None:
        raise RuntimeError("no model file")

    def run(self, xs: list[Any]) -> list[Any]:  # pragma: no cover - never built
        return xs


class ExitsWhileBuilt:
    """A UDF whose constructor ends its process (a native library calling exit, say)."""

    def __init__(self) -> None:
        os._exit(3)

    def run(self, xs: list[Any]) -> list[Any]:  # pragma: no cover - never built
        return xs


class ScaleInPlace:
    """Divides each array in place: fails on a read-only array."""

    def run(self, xs: list[Any]) -> list[Any]:
        for x in xs:
            x /= 255
        return list(xs)


class Writable:
    def run(self, xs: list[Any]) -> list[bool]:
        return [bool(x.flags.writeable) for x in xs]


ARRAY_BYTES = 1 << 20  # over Ray's inline limit: the array is put in the object store


class MakeArray:
    """row -> a uint8 array of ARRAY_BYTES, every byte row % 251."""

    def run(self, rows: list[int]) -> list[Any]:
        import numpy as np

        return [np.full(ARRAY_BYTES, r % 251, dtype=np.uint8) for r in rows]


def mapping_of(address: int) -> str:
    """The file mapped at `address` in this process ('' for anonymous memory)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            low, high = (int(v, 16) for v in parts[0].split("-"))
            if low <= address < high:
                return " ".join(parts[5:])
    return ""


class WhereArrayLives:
    """array -> (whether it is writable, the file its memory maps, the sum of its bytes)."""

    def run(self, arrays: list[Any]) -> list[tuple[bool, str, int]]:
        return [
            (
                bool(a.flags.writeable),
                mapping_of(a.__array_interface__["data"][0]),
                int(a.sum(dtype="int64")),
            )
            for a in arrays
        ]


def scaled_in_place() -> Any:
    """(the source scaled in place, whether the array another Call made arrived writable)."""
    scale = ro.RayModule(ScaleInPlace).ray_options(recovery=ro.RecoveryPolicy.isolate_tail())
    same, writable = ro.RayModule(Noop), ro.RayModule(Writable)

    def forward(x: ro.Port) -> tuple[ro.Port, ro.Port]:
        return scale(x), writable(same(x))

    return forward


class Noop:
    def run(self, xs: list[Any]) -> list[Any]:
        return xs


class WaitsForTheFirstCall:
    """Replica 0 starts at once; the others finish their constructors only once a call has
    run (a marker file in `shared`, a directory every node sees) or after a watchdog, which
    they record. Each row: its value times 3."""

    def __init__(self, shared: str) -> None:
        context = ro.replica_context()
        index = context.index if context is not None else 0
        self.marker = os.path.join(shared, "first-call")
        if index > 0:
            deadline = time.monotonic() + 60
            while not os.path.exists(self.marker):
                if time.monotonic() > deadline:
                    open(os.path.join(shared, f"watchdog-{index}"), "w").close()
                    break
                time.sleep(0.05)

    def run(self, xs: list[int]) -> list[int]:
        open(self.marker, "a").close()
        return [x * 3 for x in xs]


class ReplicaIndex:
    """Each row: the index of the replica that ran it, as its constructor learnt it."""

    def __init__(self) -> None:
        context = ro.replica_context()
        self.index = context.index if context is not None else -1

    def run(self, xs: list[Any]) -> list[int]:
        time.sleep(0.05)  # keeps an actor busy so that the others take calls too
        return [self.index for _ in xs]


def documents(
    ocr_replicas: int | str = 2,
    ocr_batch: int = 3,
    ocr_args: tuple[Any, ...] = (),
    ocr_options: dict[str, Any] | None = None,
) -> ro.Pipeline:
    """docs -> pages -> ocr -> assemble -> keep non-empty documents."""

    class Documents(ro.Pipeline):
        def __init__(self) -> None:
            self.pages = ro.Module(Pages, batch_size=4, num_cpus=0.5)
            self.ocr = ro.Module(
                Ocr,
                replicas=ocr_replicas,
                batch_size=ocr_batch,
                num_cpus=0.5,
                **(ocr_options or {}),
            ).pre_init(*ocr_args)
            self.assemble = ro.Module(Assemble, batch_size=2, num_cpus=0.5)
            self.keep = ro.Module(NonEmpty, batch_size=4, num_cpus=0.5)

        def forward(self, docs: ro.Port) -> Any:
            texts = self.ocr(F.expand(self.pages(docs)))
            md = self.assemble(F.reduce(texts), docs)
            return F.filter(md, self.keep(md))

    return Documents()


class Big:
    """x -> a 200 kB string (kept in the object store of its actor's node); leaves a marker
    per row."""

    def __init__(self, marker_dir: str) -> None:
        self.marker_dir = marker_dir

    def run(self, xs: list[int]) -> list[str]:
        for x in xs:
            once(self.marker_dir, f"big-{x}")
        return [f"{x}:" + "x" * 200_000 for x in xs]


class BigToo(Big):
    """Big with markers of its own (`bigtoo-<x>`): a second producer of 200 kB values."""

    def run(self, xs: list[int]) -> list[str]:
        for x in xs:
            once(self.marker_dir, f"bigtoo-{x}")
        return [f"{x}:" + "z" * 200_000 for x in xs]


class Grow:
    """text -> text + "y" (still kept in the object store of its actor's node); leaves a
    marker per row."""

    def __init__(self, marker_dir: str) -> None:
        self.marker_dir = marker_dir

    def run(self, texts: list[str]) -> list[str]:
        for t in texts:
            once(self.marker_dir, "grow-" + t.split(":")[0])
        return [t + "y" for t in texts]


class BigPages:
    """x -> two 200 kB pages (kept in the object store of its actor's node); leaves a marker
    per row."""

    def __init__(self, marker_dir: str) -> None:
        self.marker_dir = marker_dir

    def run(self, xs: list[int]) -> list[list[str]]:
        for x in xs:
            once(self.marker_dir, f"pages-{x}")
        return [[f"{x}/{k}:" + "x" * 200_000 for k in range(2)] for x in xs]


class WaitForGo:
    """x -> x, once the file `go` exists."""

    def __init__(self, marker_dir: str) -> None:
        self.marker_dir = marker_dir

    def run(self, xs: list[int]) -> list[int]:
        while not os.path.exists(os.path.join(self.marker_dir, "go")):
            time.sleep(0.05)
        return xs


class WaitThenMeasure:
    """text (or a group of texts) -> its length (their total length); the first call leaves
    the marker `first-done`, every later call waits until the file `go` exists."""

    def __init__(self, marker_dir: str) -> None:
        self.marker_dir, self.calls = marker_dir, 0

    def run(self, texts: list[Any]) -> list[int]:
        self.calls += 1
        while self.calls > 1 and not os.path.exists(os.path.join(self.marker_dir, "go")):
            time.sleep(0.05)
        out = [sum(map(len, t)) if isinstance(t, list) else len(t) for t in texts]
        once(self.marker_dir, "first-done")
        return out


class WaitThenMeasureBoth:
    """WaitThenMeasure of two texts per row: their total length."""

    def __init__(self, marker_dir: str) -> None:
        self.marker_dir, self.calls = marker_dir, 0

    def run(self, texts: list[str], more: list[str]) -> list[int]:
        self.calls += 1
        while self.calls > 1 and not os.path.exists(os.path.join(self.marker_dir, "go")):
            time.sleep(0.05)
        out = [len(a) + len(b) for a, b in zip(texts, more, strict=True)]
        once(self.marker_dir, "first-done")
        return out


PAGE_BYTES = 256 * 1024  # over Ray's inline limit: a page lives in its node's object store


class LargePages:
    """doc d -> d % 3 + 1 pages of PAGE_BYTES (kept in the object store of its actor's node)."""

    def run(self, docs: list[int]) -> list[list[bytes]]:
        return [
            [f"{d}/{k}:".encode() + bytes([(d + k) % 251]) * PAGE_BYTES for k in range(d % 3 + 1)]
            for d in docs
        ]


class ReadPage:
    """page -> 'd/k=<length>:<sum of its bytes>', after `sleep_s`."""

    def __init__(self, sleep_s: float) -> None:
        self.sleep_s = sleep_s

    def run(self, pages: list[bytes]) -> list[str]:
        time.sleep(self.sleep_s)
        return [f"{p.split(b':', 1)[0].decode()}={len(p)}:{sum(p)}" for p in pages]


def large_documents(spot: dict[str, float] | None = None) -> ro.Pipeline:
    """docs -> large pages -> read -> reduce -> assemble; `spot`: the resources the page
    makers ask for (keeps them on the nodes that are preempted)."""

    class LargeDocuments(ro.Pipeline):
        def __init__(self) -> None:
            extra: dict[str, Any] = {"resources": spot} if spot else {}
            self.pages = ro.Module(
                LargePages, replicas=2, batch_size=2, num_cpus=0.25, infra_retries=8, **extra
            )
            self.read = ro.Module(
                ReadPage, replicas=3, batch_size=4, num_cpus=0.25, infra_retries=8
            ).pre_init(0.05)
            self.assemble = ro.Module(Assemble, batch_size=4, num_cpus=0.25, infra_retries=8)

        def forward(self, docs: ro.Port) -> Any:
            return self.assemble(F.reduce(self.read(F.expand(self.pages(docs)))), docs)

    return LargeDocuments()


class ManyPages:
    """doc n -> its 24 pages [n*100, ..., n*100 + 23]."""

    def run(self, docs: list[int]) -> list[list[int]]:
        return [[d * 100 + i for i in range(24)] for d in docs]


class LateOcr:
    """page -> 'text<page>', as a model call: 0.3 s plus 20 ms per page. The first actor to
    construct starts at once, every other one `late_s` later (a slow model load). Each call
    appends '<pid> <pages...>' to `marker_dir`/calls.log, so a test sees which actor read what."""

    def __init__(self, marker_dir: str, late_s: float) -> None:
        self.log = os.path.join(marker_dir, "calls.log")
        if not once(marker_dir, "first-actor"):
            time.sleep(late_s)

    def run(self, pages: list[int]) -> list[str]:
        time.sleep(0.3 + 0.02 * len(pages))
        with open(self.log, "a") as f:  # one short append per call: lines do not interleave
            f.write(f"{os.getpid()} {' '.join(str(p) for p in pages)}\n")
        return [f"text{p}" for p in pages]


def late_actor_documents(marker_dir: str, late_s: float) -> ro.Pipeline:
    """docs -> 24 pages each -> OCR on two actors, one ready `late_s` after the other ->
    assemble."""

    class LateActorDocuments(ro.Pipeline):
        def __init__(self) -> None:
            self.pages = ro.Module(ManyPages, batch_size=1, num_cpus=0.5)
            self.ocr = ro.Module(LateOcr, replicas=2, batch_size=8, num_cpus=0.5).pre_init(
                marker_dir, late_s
            )
            self.assemble = ro.Module(Assemble, batch_size=2, num_cpus=0.5)

        def forward(self, docs: ro.Port) -> Any:
            return self.assemble(F.reduce(self.ocr(F.expand(self.pages(docs)))), docs)

    return LateActorDocuments()


class Unwrap:
    """A list value stays a list (for F.expand)."""

    def run(self, xs: list[Any]) -> list[Any]:
        return [list(x) for x in xs]


class Describe:
    """Reads nested groups: the value a Call sees is the nested list itself."""

    def run(self, groups: list[Any]) -> list[str]:
        return [repr(g) for g in groups]


def nested_gathers() -> ro.Pipeline:
    """root -> documents -> pages, gathered per document and then per root: a gather of
    gathers, as an output and read by a Call."""

    class NestedGathers(ro.Pipeline):
        def __init__(self) -> None:
            self.unwrap = ro.Module(Unwrap, replicas=2, batch_size=2, num_cpus=0.25)
            self.describe = ro.Module(Describe, batch_size=2, num_cpus=0.25)

        def forward(self, roots: ro.Port) -> Any:
            documents = F.expand(self.unwrap(roots))
            pages = F.expand(self.unwrap(documents))
            gathered = F.reduce(F.reduce(pages))
            return gathered, self.describe(gathered)

    return NestedGathers()
