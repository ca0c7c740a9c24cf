"""What the OCR workload's peers share (ocr_ray_data_peer.py, ocr_daft_peer.py,
ocr_reference_peer.py), run by python/bench/ocr_peers.py.

Every peer runs the project's own stage classes (rayorch_cpp.workloads.ocr_pdf.stages:
OpenPdf, RenderPage, DetectLines, RecognizeLines, JoinLines, AssembleMarkdown), so every
system runs identical model code; only the dataflow around them is each system's own. The
driver puts the project's package and this directory on PYTHONPATH, and Ray's workers inherit
it, so the UDFs import these modules by name.

Each peer writes one JSON result: its timings, the recognition calls its actors logged (lines
per call), and every document's Markdown by path; the driver checks recall and measures
memory.
"""

import argparse
import json
import os
import time

import common


def parse_args(description, arms=("default",)):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--corpus", required=True, help="directory written by samples.make_corpus")
    p.add_argument("--out", required=True, help="where to write the result JSON")
    p.add_argument("--arm", choices=arms, default=arms[0])
    p.add_argument("--events-dir", required=True, help="where recognition actors log calls")
    p.add_argument("--dpi", type=float, default=200.0)  # the OCR workload's RENDER_DPI
    p.add_argument("--detect-replicas", type=int, default=1)
    p.add_argument("--recognize-replicas", type=int, default=2)
    p.add_argument("--recognize-batch", type=int, default=32)
    p.add_argument("--recognize-cpus", type=float, default=1.0)
    p.add_argument("--ray-cpus", type=int, required=True, help="logical CPUs of the local Ray")
    return p.parse_args()


def corpus_paths(directory):
    """The corpus's PDF paths, in manifest order."""
    from rayorch_cpp.workloads.ocr_pdf import samples

    return [d.path for d in samples.load_corpus(directory)]


def start_local_ray(num_cpus):
    """A new one-node Ray with `num_cpus` logical CPUs, as common.start_local_ray starts it
    (only in a loopback-only namespace, every node checked to be on 127.0.0.1)."""
    common.start_local_ray(num_cpus=num_cpus)


class CallLog:
    """A recognition actor's log: one `calls N` line per model call (N lines read), appended
    to a file of its own in the events directory."""

    def __init__(self, events_dir):
        self.file = open(os.path.join(events_dir, f"recognize-{os.getpid()}-{id(self)}.log"), "a")

    def call(self, lines):
        self.file.write(f"calls {lines}\n")
        self.file.flush()


def read_calls(events_dir):
    """Lines per recognition call, from every actor's log."""
    calls = []
    for name in sorted(os.listdir(events_dir)):
        with open(os.path.join(events_dir, name)) as f:
            calls += [int(line.split()[1]) for line in f if line.startswith("calls ")]
    return calls


def page_markdown(path, page_lines, page_count):
    """A document's Markdown from its recognised lines, with the project's JoinLines and
    AssembleMarkdown: `page_lines` maps a page number to its (line index, row, text) triples
    in any order; pages absent from it have no text."""
    from pathlib import Path

    from rayorch_cpp.workloads.ocr_pdf.stages import AssembleMarkdown, DocumentInfo, JoinLines

    texts, rows = [], []
    for page in range(page_count):
        lines = sorted(page_lines.get(page, ()))
        texts.append([t for _, _, t in lines])
        rows.append([r for _, r, _ in lines])
    joined = JoinLines().run(texts, rows)
    return AssembleMarkdown().run([joined], [DocumentInfo(Path(path).stem, page_count)])[0].text


class Clock:
    """Marks relative to the start of the pipeline (after Ray's start-up, before any actor
    is built, so every system's E2E includes its actors' model loading)."""

    def __init__(self):
        self.start = time.perf_counter()
        self.first = None

    def document_done(self):
        if self.first is None:
            self.first = time.perf_counter() - self.start


def store_created_bytes():
    """Bytes created in the object stores of the running Ray's live nodes since it started,
    or None without a running Ray: python/bench/loopback_ray.py's count, which
    python/bench/ocr_peers.py links beside the project's package on the peers' path."""
    import ray
    from loopback_ray import store_created_bytes as created

    return created(ray) if ray.is_initialized() else None


def write_result(args, system, version, clock, documents):
    """Writes the result JSON: `documents` maps a path to its Markdown; Ray must still run
    (the object store's figure is read here)."""
    result = {
        "system": system,
        "version": version,
        "end_to_end_seconds": time.perf_counter() - clock.start,
        "first_document_seconds": clock.first,
        "recognize_calls": read_calls(args.events_dir),
        "store_created_bytes": store_created_bytes(),
        "documents": documents,
    }
    with open(args.out + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(args.out + ".tmp", args.out)
    print(
        f"{system}: {len(documents)} documents in {result['end_to_end_seconds']:.2f} s, "
        f"first after {clock.first or float('nan'):.2f} s"
    )
