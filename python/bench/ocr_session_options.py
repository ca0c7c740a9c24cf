"""onnxruntime's session options for the OCR models, one at a time, on real pages: the time of
detection's ``run()`` per page and of recognition's per line (each line alone at its width
class, as the workload reads it), and the process's peak RSS, minor page faults and kernel
time. Each configuration runs in a fresh process.

    .venv/bin/python python/bench/ocr_session_options.py [--pdfs /tmp/debian-pdfs]

(``bash scripts/debian-pdfs.sh /tmp/debian-pdfs`` collects the PDFs.) The workload's own
choice is the first line: arena on, every graph optimisation, one intra-op thread per CPU the
Module asks for (here 1)."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from typing import Any

PAGES = (
    ("shared-mime-info-spec.pdf", (2, 3)),
    ("libtasn1.pdf", (5, 12)),
    ("ReleaseNotes.pdf", (3,)),
    ("mom-pdf.pdf", (2,)),
)
CHOICE = {"arena": True, "optimisation": "ORT_ENABLE_ALL", "threads": 1}
VARIANTS = (
    CHOICE,
    dict(CHOICE, arena=False),
    dict(CHOICE, optimisation="ORT_ENABLE_BASIC"),
    dict(CHOICE, threads=2),
)


def measure(pdfs: str, config: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    import onnxruntime as ort
    import pypdfium2 as pdfium

    from rayorch_cpp.workloads.ocr_pdf import detect, models, recognize

    def session(model: str) -> Any:
        options = ort.SessionOptions()
        options.intra_op_num_threads = config["threads"]
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        options.enable_cpu_mem_arena = config["arena"]
        options.graph_optimization_level = getattr(
            ort.GraphOptimizationLevel, config["optimisation"]
        )
        return ort.InferenceSession(str(models.model_path(model)), sess_options=options)

    detect.open_session = session  # type: ignore[assignment]
    recognize.open_session = session  # type: ignore[assignment]
    detector = detect.TextLineDetector()
    recognizer = recognize.TextLineRecognizer()
    detecting = recognizing = 0.0
    pages = lines = 0
    for name, numbers in PAGES:
        document = pdfium.PdfDocument(f"{pdfs}/{name}")
        for number in numbers:
            image = np.ascontiguousarray(
                document[number].render(scale=200 / 72).to_numpy()[..., :3]
            )
            tensor = detector.preprocess(image)
            start = time.perf_counter()
            detector.session.run(None, {detector.input_name: tensor})
            detecting += time.perf_counter() - start
            pages += 1
            for box in detector.boxes(image):
                line = detect.crop(image, box)
                width = recognize.width_class(recognize.scaled_width(line))
                batch, _, _ = recognize.batch_tensor([line], width)
                start = time.perf_counter()
                recognizer.session.run(None, {recognizer.input_name: batch})
                recognizing += time.perf_counter() - start
                lines += 1
        document.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return dict(
        config,
        detect_ms_per_page=round(detecting / pages * 1000, 1),
        recognize_ms_per_line=round(recognizing / lines * 1000, 1),
        lines=lines,
        peak_rss_mib=round(usage.ru_maxrss / 1024),
        minor_faults=usage.ru_minflt,
        kernel_s=round(usage.ru_stime, 2),
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--pdfs", default="/tmp/debian-pdfs")
    p.add_argument("--config", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.config is not None:
        print(json.dumps(measure(a.pdfs, json.loads(a.config))))
        return
    for config in VARIANTS:
        out = subprocess.run(
            [sys.executable, __file__, "--pdfs", a.pdfs, "--config", json.dumps(config)],
            capture_output=True,
            text=True,
            check=True,
        )
        print(out.stdout.strip(), flush=True)


if __name__ == "__main__":
    main()
