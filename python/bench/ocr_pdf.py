"""The OCR workload (rayorch_cpp.workloads.ocr_pdf: PP-OCRv4 on onnxruntime) on a generated
corpus of image PDFs with known text and long-tailed page counts.

    .venv/bin/python python/bench/ocr_pdf.py [--docs 40 --max-pages 80 --seed 24]
        [--recognize-batch 32] [--recognize-replicas N] [--detect-replicas N]
        [--backend ray] [--isolation process] [--recognize-batch-wait S]
        [--input-batch-size 16 --max-active-input-batches 2] [--json PATH]
    .venv/bin/python python/bench/ocr_pdf.py --pdfs DIR [--pages-per-document 6] [--baselines]

The corpus is written once into --work-dir (default /tmp/ocr-pdf-bench-DOCS-SEED-MAXPAGES) and
reused. Prints pages/s, the time to the first finished document, the recognition batch fill
(lines per recognition call against --recognize-batch; a call reads each width class of its
lines in one inference), each stage's busy time, the stages' summed busy time and the
process's CPU time over the cores (what this run spent, which counts its own waste: not a
limit; the model-inference limit is --baselines'), the peak RSS of this process (every
actor of the local backend is a thread of it; on Ray only the driver's), and word recall
against the text drawn on the pages. The Executor (models loaded) is built before the clock
starts.

With ``--pdfs`` it reads real PDFs instead (``bash scripts/debian-pdfs.sh DIR`` collects eight
that Debian ships, typeset by six systems), each cut to its first pages, and scores each
against its text layer (``pdftotext``); ``--baselines`` adds the model-inference limit and
RapidOCR() in a process pool on the same pages (ocr_baselines.py).

With ``--backend ray`` the script starts a new one-node Ray cluster on this machine only: it
re-executes itself in a private network namespace whose only interface is loopback
(``unshare --net --pid --fork --mount-proc``, as root) and checks before and after the run
that every Ray node is on 127.0.0.1 (loopback_ray.py), and prints the nodes' addresses. On
Ray it prints the CPU of the whole process tree too: the driver, Ray's own processes and the
actors."""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import time
from pathlib import Path
from typing import Any

from loopback_ray import (
    check_on_loopback,
    ensure_private_network,
    start_local_ray,
    store_created_bytes,
)
from ocr_baselines import RealDocument, cut_documents, inference_seconds, rapidocr_pool

import rayorch_cpp as ro
from rayorch_cpp.workloads.ocr_pdf import (
    Markdown,
    OcrPdf,
    PipelineConfig,
    StageOptions,
    recall,
    samples,
)


def corpus(directory: Path, docs: int, seed: int, max_pages: int) -> list[samples.SampleDocument]:
    if (directory / samples.MANIFEST).is_file():
        return samples.load_corpus(directory)
    return samples.make_corpus(directory, docs, seed=seed, max_pages=max_pages, blank_pages=2)


def descendants(root: int | None = None) -> list[int]:
    """The processes below `root` (default: this one; here, the worker server and its
    workers)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, stack = [], [os.getpid() if root is None else root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def cpu_by_process(on_ray: bool) -> dict[int, tuple[str, float]]:
    """CPU seconds so far of this process (role "driver") and of each live descendant, by
    pid: "actors" for Ray's worker processes (named ``ray::...``), "ray" for Ray's own
    processes (GCS, raylet, agents), "workers" for the local backend's worker processes."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out = {os.getpid(): ("driver", usage.ru_utime + usage.ru_stime)}
    tick = os.sysconf("SC_CLK_TCK")
    for pid in descendants():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        role = "actors" if command.startswith(b"ray::") else "ray" if on_ray else "workers"
        out[pid] = (role, (int(fields[11]) + int(fields[12])) / tick)
    return out


def cpu_since(before: dict[int, tuple[str, float]], on_ray: bool) -> dict[str, float]:
    """CPU seconds per role (cpu_by_process) since `before`; processes started since count
    from 0, those ended since are not counted."""
    by_role: dict[str, float] = {}
    for pid, (role, seconds) in cpu_by_process(on_ray).items():
        spent = seconds - before[pid][1] if pid in before else seconds
        by_role[role] = by_role.get(role, 0.0) + spent
    return by_role


def rss_mib(pids: list[int]) -> float:
    """The summed resident memory of the live processes among `pids` now."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def write_json(
    path: Path,
    a: argparse.Namespace,
    startup: float,
    wall: float,
    first: float,
    result: ro.RunResult,
    paths: list[str],
    outputs: dict[int, Any],
    cpu_roles: dict[str, float],
    store_bytes: int | None,
) -> None:
    """The figures python/bench/ocr_peers.py compares: E2E and the first document counted
    from before the Executor is built (so they include model loading, as the peers' do), and
    every document's Markdown by path."""
    fill = next(c.mean_batch_fill for c in result.calls if c.call.split("#")[0] == "recognize")
    figures = {
        "system": f"rayorch_cpp ({a.backend}, {a.isolation})",
        "version": "this build",
        "pages": sum(outputs[row].pages for row in range(len(paths))),
        "run_seconds": wall,
        "startup_seconds": startup,
        "end_to_end_seconds": startup + wall,
        "first_document_seconds": startup + first,
        "recognize_fill": fill,
        # The CPU that ran the stages: the actors' on Ray, the whole process's locally.
        "stage_cpu_seconds": cpu_roles.get("actors", 0.0)
        if a.backend == "ray"
        else sum(cpu_roles.values()),
        "store_created_bytes": store_bytes,
        "documents": {p: outputs[row].text for row, p in enumerate(paths)},
    }
    path.write_text(json.dumps(figures))


def main() -> None:
    cores = os.cpu_count() or 1
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--docs", type=int, default=40)
    p.add_argument("--max-pages", type=int, default=80)
    p.add_argument("--seed", type=int, default=24)
    p.add_argument("--work-dir", type=Path, default=None)
    p.add_argument(
        "--pdfs",
        nargs="+",
        default=None,
        help="real PDFs (files or directories; scripts/debian-pdfs.sh collects some) in place "
        "of the generated corpus, scored against their text layers (pdftotext)",
    )
    p.add_argument(
        "--pages-per-document", type=int, default=6, help="with --pdfs: the first pages read"
    )
    p.add_argument(
        "--baselines",
        action="store_true",
        help="with --pdfs: also the model-inference limit and RapidOCR() in a process pool "
        "(ocr_baselines.py)",
    )
    p.add_argument("--dpi", type=float, default=PipelineConfig().dpi)
    p.add_argument("--detect-replicas", type=int, default=max(1, cores // 3))
    p.add_argument("--recognize-replicas", type=int, default=max(1, cores - cores // 3))
    p.add_argument("--recognize-batch", type=int, default=32)
    p.add_argument("--recognize-cpus", type=float, default=1.0)
    p.add_argument("--recognize-gpus", type=float, default=0.0)
    p.add_argument(
        "--recognize-batch-wait",
        type=float,
        default=None,
        help="seconds an idle recognition actor waits for a fuller batch (default: the workload's)",
    )
    p.add_argument("--detect-gpus", type=float, default=0.0)
    p.add_argument(
        "--colocate-render-detect",
        action="store_true",
        help="render and detect share one co-located pool of --detect-replicas actors of one "
        "CPU each, so each page image stays in the actor that rendered it (DESIGN 5.12)",
    )
    p.add_argument("--input-batch-size", type=int, default=16)
    p.add_argument(
        "--max-active-input-batches",
        type=int,
        default=2,
        help="input batches admitted at once (the workload command's default)",
    )
    p.add_argument("--backend", choices=("local", "ray"), default="local")
    p.add_argument("--isolation", choices=("threads", "process"), default="threads")
    p.add_argument(
        "--json", type=Path, default=None, help="also write the figures and outputs here"
    )
    a = p.parse_args()
    if a.backend == "ray":
        ensure_private_network(__file__)  # re-executes this script there (as root)
    if a.pdfs is not None:
        work = a.work_dir or Path(f"/tmp/ocr-pdf-bench-real-{a.pages_per_document}")
        real = cut_documents(a.pdfs, work, a.pages_per_document)
        paths = [d.path for d in real]
        expected = [d.text for d in real]
        lengths = sorted(d.pages for d in real)
    else:
        work = a.work_dir or Path(f"/tmp/ocr-pdf-bench-{a.docs}-{a.seed}-{a.max_pages}")
        documents = corpus(work, a.docs, a.seed, a.max_pages)
        paths = [d.path for d in documents]
        expected = [d.text for d in documents]
        lengths = sorted(len(d.pages) for d in documents)
    pages = sum(lengths)
    print(
        f"corpus: {len(paths)} documents, {pages} pages (median {lengths[len(lengths) // 2]}, "
        f"longest {lengths[-1]}) in {work}; {cores} cores, load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    together = "page" if a.colocate_render_detect else None
    render = PipelineConfig().render
    if together:
        render = StageOptions(
            replicas=a.detect_replicas,
            batch_size=render.batch_size,
            num_gpus=a.detect_gpus,
            colocate=together,
        )
    config = PipelineConfig(
        dpi=a.dpi,
        render=render,
        detect=StageOptions(replicas=a.detect_replicas, num_gpus=a.detect_gpus, colocate=together),
        recognize=StageOptions(
            replicas=a.recognize_replicas,
            batch_size=a.recognize_batch,
            num_cpus=a.recognize_cpus,
            num_gpus=a.recognize_gpus,
            batch_wait=PipelineConfig().recognize.batch_wait
            if a.recognize_batch_wait is None
            else a.recognize_batch_wait,
        ),
    )
    ray = None
    if a.backend == "ray":
        # Logical CPUs for every actor the pipeline asks for (the machine's cores are what
        # they share, as on the local backend).
        stages = (config.open, config.render, config.detect, config.recognize, config.join)
        asked = sum(st.replicas * st.num_cpus for st in (*stages, config.assemble))
        ray = start_local_ray(max(cores, math.ceil(asked)))
    built = time.monotonic()
    with ro.Executor(OcrPdf(config), backend=a.backend, isolation=a.isolation) as ex:
        startup = time.monotonic() - built
        first: list[float] = []
        outputs: dict[int, Any] = {}

        def on_row(row: int, doc: Any) -> None:
            if not first:
                first.append(time.monotonic() - start)
            outputs[row] = doc

        cpu_before = cpu_by_process(ray is not None)
        start = time.monotonic()
        result = ex.run(
            paths,
            on_row=on_row,
            input_batch_size=a.input_batch_size,
            max_active_input_batches=a.max_active_input_batches,
            progress=False,
        )
        wall = time.monotonic() - start
        cpu_roles = cpu_since(cpu_before, ray is not None)
        cpu = sum(cpu_roles.values())
        workers_rss = rss_mib(descendants())
    store_bytes: int | None = None
    if ray is not None:
        nodes = len(ray.nodes())
        print(f"Ray nodes: {nodes}, addresses: {', '.join(check_on_loopback(ray))}")
        store_bytes = store_created_bytes(ray)
        ray.shutdown()
    found = total = 0
    for row, text in enumerate(expected):
        doc = outputs[row]
        assert isinstance(doc, Markdown), doc
        hit, words = recall.word_recall(text, doc.text)
        found, total = found + hit, total + words
        if a.pdfs is not None:
            source = real[row]
            print(
                f"  {Path(source.source).name:<28} {source.producer:<32} {source.pages:3d} pages "
                f"{words:6d} words  recall {hit / words if words else float('nan'):.4f}"
            )
    print(
        f"stages: detect {a.detect_replicas} x 1 cpu, recognize {a.recognize_replicas} x "
        f"{a.recognize_cpus:g} cpu batch {a.recognize_batch} (batch wait "
        f"{config.recognize.batch_wait:g} s); input batches of {a.input_batch_size}, "
        f"{a.max_active_input_batches} active; backend {a.backend} ({a.isolation}); models "
        f"loaded in {startup:.2f} s"
    )
    print(
        f"end to end {wall:.2f} s = {pages / wall:.2f} pages/s; first document after "
        f"{first[0]:.2f} s"
    )
    busy = 0.0
    for c in result.calls:
        busy += c.busy_s
        print(
            f"  {c.call:<14} {c.rpcs:5d} calls {c.grain_dispatches:6d} grains "
            f"{c.average_batch:6.1f} per call (fill {c.mean_batch_fill:.2f}) busy {c.busy_s:7.2f} s"
        )
    if a.backend == "local":
        print(
            f"spent: stage busy {busy:.1f} s / {cores} cores = {busy / cores:.2f} s; "
            f"CPU of the process and its workers {cpu:.1f} s / {cores} cores = "
            f"{cpu / cores:.2f} s (wall {wall:.2f} s)"
        )
    else:
        # On Ray the actors' stage busy time counts time they waited for a core, so it is no
        # limit; the CPU of the whole tree says what the run cost, Ray's share included.
        print(
            f"stage busy {busy:.1f} s / {cores} cores = {busy / cores:.2f} s; CPU of the "
            f"driver, Ray's processes and the actors {cpu:.1f} s / {cores} cores = "
            f"{cpu / cores:.2f} s (driver {cpu_roles.get('driver', 0.0):.1f} s, Ray's "
            f"processes {cpu_roles.get('ray', 0.0):.1f} s, actors "
            f"{cpu_roles.get('actors', 0.0):.1f} s; wall {wall:.2f} s)"
        )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if a.json is not None:
        write_json(
            a.json, a, startup, wall, first[0], result, paths, outputs, cpu_roles, store_bytes
        )
    print(
        f"peak RSS {rss:.0f} MiB (worker processes at the end: {workers_rss:.0f} MiB); word "
        f"recall {found / total if total else float('nan'):.4f} ({found}/{total})"
    )
    if a.pdfs is not None and a.baselines:
        print_baselines(real, a.dpi, config.detect_side, cores, pages / wall, found / total)


def print_baselines(
    real: list[RealDocument],
    dpi: float,
    detect_side: int,
    cores: int,
    pages_per_second: float,
    found: float,
) -> None:
    pages = sum(d.pages for d in real)
    model = inference_seconds(real, dpi, detect_side)
    limit = pages / (model / cores)
    print(
        f"model-inference limit: detection and recognition run() alone {model:.1f} s on one "
        f"thread for {pages} pages / {cores} cores = {limit:.2f} pages/s; this run "
        f"{pages_per_second / limit:.1%} of it"
    )
    pool = rapidocr_pool(real, dpi, cores)
    hits = words = 0
    for d in real:
        hit, count = recall.word_recall(d.text, pool.texts.get(d.path, ""))
        hits, words = hits + hit, words + count
        print(f"  RapidOCR() {Path(d.source).name:<28} recall {hit / count if count else 0:.4f}")
    print(
        f"RapidOCR() in a pool of {cores} processes (1 thread each): {pool.seconds:.2f} s = "
        f"{pages / pool.seconds:.2f} pages/s, recall {hits / words:.4f}; this run "
        f"{pages_per_second / (pages / pool.seconds):.2f}x its pages/s, recall "
        f"{found - hits / words:+.4f}"
    )


if __name__ == "__main__":
    main()
