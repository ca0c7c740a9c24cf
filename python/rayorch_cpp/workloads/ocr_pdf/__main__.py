"""``python -m rayorch_cpp.workloads.ocr_pdf IN... -o OUT``: PDFs to Markdown with the OCR
pipeline (PP-OCRv4 on onnxruntime), on the local backend or a Ray cluster. The inputs,
outputs, run journal, failure list and exit codes are ``rayorch pdf2md``'s (convert.py)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from ... import ExecutionError
from .._input_selection import SelectionError, parse_row_range, parse_shard
from .models import OcrStackMissing, require_ocr_stack

if TYPE_CHECKING:
    from .convert import ConvertOptions

EXIT_CODES = (
    "Exit status: 0 every document was converted (or restored by --resume); 1 the run "
    "finished but some documents failed (listed in OUTDIR/failures.jsonl); 2 bad command line, "
    "missing or unreadable input, duplicate document names, unwritable output, or models that "
    "cannot load (nothing is converted); 3 the run stopped on an unrecoverable error "
    "(documents finished before it are complete; rerun with --resume)."
)
EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE, EXIT_ABORTED = 0, 1, 2, 3
STAGES = ("open", "render", "detect", "recognize", "join", "assemble")
MODEL_STAGES = ("detect", "recognize")
# The stages that call into pdfium, native code that reads untrusted files.
PDFIUM_STAGES = ("open", "render")


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def non_negative_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, not {value:g}")
    return value


def shard_arg(text: str) -> tuple[int, int]:
    try:
        return parse_shard(text)
    except SelectionError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def row_range_arg(text: str) -> tuple[int, int | None]:
    try:
        return parse_row_range(text)
    except SelectionError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parser() -> argparse.ArgumentParser:
    from .stages import PipelineConfig, StageOptions

    cores = os.cpu_count() or 1
    defaults = PipelineConfig()
    p = argparse.ArgumentParser(
        prog="python -m rayorch_cpp.workloads.ocr_pdf",
        description="Convert PDFs to Markdown: list each document's pages, render each page, "
        "detect its text lines, recognise the lines of many pages of many documents in one "
        "batched model calls, gather lines per page and pages per document, and write each "
        "document as OUTDIR/<stem>.md as soon as its own pages are done.",
        epilog=EXIT_CODES,
    )
    p.add_argument(
        "inputs",
        nargs="*",
        help="PDF files, directories (searched recursively) and glob patterns",
    )
    p.add_argument(
        "--manifest",
        action="append",
        default=[],
        help="a JSON-lines file (or a JSON-lines sink's folder) listing documents, one per "
        "line in --path-field; relative paths from its folder (repeatable)",
    )
    p.add_argument("--path-field", default="path", help="the manifests' path field")
    p.add_argument(
        "--shard",
        type=shard_arg,
        default=None,
        help="I/N: this job converts inputs I, I+N, I+2N, ... of the list (jobs 0..N-1 "
        "convert every input once)",
    )
    p.add_argument(
        "--row-range",
        type=row_range_arg,
        default=None,
        help="START:STOP: inputs [START, STOP) of the list (before --shard)",
    )
    p.add_argument("-o", "--output", required=True, help="output directory (created if missing)")
    p.add_argument("--dpi", type=float, default=defaults.dpi, help="rendering resolution")
    p.add_argument(
        "--detect-side",
        type=positive_int,
        default=defaults.detect_side,
        help="longest side, in pixels, pages are scaled to for line detection (crops are cut "
        "from the full render)",
    )
    for stage in STAGES:
        stage_defaults: StageOptions = getattr(defaults, stage)
        replicas = cores if stage == "recognize" else stage_defaults.replicas
        # None: the default, which --backend ray fits to the cluster's CPUs.
        p.add_argument(
            f"--{stage}-replicas",
            type=positive_int,
            default=None,
            help=f"actors (default {replicas}"
            + (": the cores here, or the Ray cluster's CPUs" if stage == "recognize" else "")
            + ")",
        )
        p.add_argument(f"--{stage}-batch", type=positive_int, default=stage_defaults.batch_size)
        p.add_argument(
            f"--{stage}-cpus",
            type=non_negative_float,
            default=None,
            help=f"CPUs per actor (default {stage_defaults.num_cpus:g}; with --backend ray and "
            "no --*-cpus or --*-replicas given, scaled down to fit a smaller cluster)",
        )
        if stage in MODEL_STAGES:
            p.add_argument(
                f"--{stage}-gpus",
                type=non_negative_float,
                default=0.0,
                help=f"GPUs per {stage} actor (> 0: onnxruntime's CUDA provider; needs "
                "onnxruntime-gpu)",
            )
    p.add_argument("--input-batch-size", type=int, default=16, help="documents per input batch")
    p.add_argument("--max-active-batches", type=positive_int, default=2)
    p.add_argument("--resume", action="store_true", help="continue an interrupted conversion")
    p.add_argument("--no-journal", action="store_true", help="keep no run journal")
    p.add_argument("--backend", choices=("local", "ray"), default="local")
    p.add_argument(
        "--isolation",
        choices=("threads", "process"),
        default="threads",
        help="where the stages that call pdfium (open, render) run on the local backend: "
        "threads of this process, or a worker process per actor, so that a PDF that crashes "
        "pdfium fails that document, not the run (Ray actors are processes anyway)",
    )
    p.add_argument("--address", default=None, help="Ray cluster address (host:port)")
    p.add_argument("--trace", default=None, help="write a Chrome trace of every call here")
    p.add_argument(
        "--report",
        default=None,
        help="write the JSON metrics report here, and its report page beside it (.html)",
    )
    p.add_argument(
        "--no-report-page",
        action="store_true",
        help="do not write the report page beside the --report file",
    )
    p.add_argument(
        "--live",
        default=None,
        metavar="[HOST:]PORT",
        help="serve a live page of the run while it lasts (0: any free port of 127.0.0.1; the "
        "URL is printed at the start; a HOST beyond loopback needs the printed token)",
    )
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true", help="print the summary only on failures")
    return p


def options_from(a: argparse.Namespace) -> ConvertOptions:
    from .convert import ConvertOptions
    from .stages import PipelineConfig, StageOptions

    defaults = PipelineConfig()
    cores = os.cpu_count() or 1
    given = [
        getattr(a, f"{stage}_{what}")
        for stage in STAGES
        for what in ("replicas", "cpus")
        if getattr(a, f"{stage}_{what}") is not None
    ]

    def chosen(stage: str, what: str, default: Any) -> Any:
        value = getattr(a, f"{stage}_{what}")
        return default if value is None else value

    stages = {
        stage: StageOptions(
            replicas=chosen(
                stage,
                "replicas",
                cores if stage == "recognize" else getattr(defaults, stage).replicas,
            ),
            batch_size=getattr(a, f"{stage}_batch"),
            num_cpus=chosen(stage, "cpus", getattr(defaults, stage).num_cpus),
            num_gpus=getattr(a, f"{stage}_gpus", 0.0),
            batch_wait=getattr(defaults, stage).batch_wait,
            isolation="process"
            if a.isolation == "process" and a.backend == "local" and stage in PDFIUM_STAGES
            else None,
        )
        for stage in STAGES
    }
    return ConvertOptions(
        inputs=list(a.inputs),
        out_dir=a.output,
        manifests=list(a.manifest),
        path_field=a.path_field,
        shard=a.shard,
        row_range=a.row_range,
        pipeline=PipelineConfig(dpi=a.dpi, detect_side=a.detect_side, **stages),
        input_batch_size=a.input_batch_size,
        max_active_input_batches=a.max_active_batches,
        resume=a.resume,
        journal=not a.no_journal,
        trace_path=a.trace,
        report_path=a.report,
        report_page=not a.no_report_page,
        live=a.live,
        progress=not a.no_progress,
        backend=a.backend,
        address=a.address,
        fit_to_cluster=a.backend == "ray" and not given,
    )


def main(argv: list[str] | None = None) -> int:
    command = "ocr_pdf"
    try:
        require_ocr_stack()  # before anything imports the stack
    except OcrStackMissing as error:
        print(f"{command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    from .convert import InputError, convert, format_summary

    a = parser().parse_args(argv)
    if a.resume and a.no_journal:
        print(f"{command}: error: --resume and --no-journal exclude each other", file=sys.stderr)
        return EXIT_USAGE
    if not 30 <= a.dpi <= 1200:
        print(f"{command}: error: --dpi must be in 30..1200, not {a.dpi:g}", file=sys.stderr)
        return EXIT_USAGE
    try:
        summary = convert(options_from(a))
    except InputError as error:
        print(f"{command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (ExecutionError, OSError, KeyboardInterrupt) as error:
        # A KeyboardInterrupt, and some OSErrors, say nothing of themselves.
        why = "interrupted" if isinstance(error, KeyboardInterrupt) else str(error) or repr(error)
        print(f"{command}: the run stopped: {why}", file=sys.stderr)
        print(
            f"documents finished before the error are complete in {a.output}; rerun with "
            "--resume to convert the rest",
            file=sys.stderr,
        )
        return EXIT_ABORTED
    if not a.quiet or summary.failures or summary.poor_reads:
        print(format_summary(summary), end="")
    return EXIT_SOME_FAILED if summary.failures else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
