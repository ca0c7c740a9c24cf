"""The OCR workload (rayorch_cpp.workloads.ocr_pdf) on a GPU: the recognition stage alone at
batch 1, 8, 32 and 128 (lines/s and GPU utilisation), then the whole pipeline's pages/s.
Run through bench/device/ocr_gpu.sh (which enforces the time limit and can install
onnxruntime-gpu); on a machine without a usable CUDA device it says so and measures the same
on the CPU, so the script itself is testable anywhere.

    python bench/device/ocr_gpu.py [--time-limit 480] [--lines 2048] [--docs 16 --max-pages 20]

Recognition: the text lines of a generated corpus (rendered and detected once, on the CPU),
repeated up to --lines, read by an Executor whose one Module is the workload's
RecognizeLines with num_gpus=1 and the given batch_size; each batch size gets a warm-up run
(onnxruntime's CUDA provider picks its kernels per input shape on first sight) and one timed
run. GPU utilisation: nvidia-smi sampled every 100 ms during the timed run (mean and peak of
the device the actor uses). Pipeline: python/bench/ocr_pdf.py with detection and recognition
on the GPU (--pipeline-batch, --recognize-replicas), its pages/s over the run (models loaded
before the clock) and including the model loading."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def cuda_problem() -> str | None:
    """Why this machine cannot run the models on CUDA; None when it can."""
    if shutil.which("nvidia-smi") is None:
        return "nvidia-smi is not on PATH (no NVIDIA driver)"
    probe = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    if probe.returncode != 0 or "GPU" not in probe.stdout:
        return f"nvidia-smi lists no GPU ({(probe.stderr or probe.stdout).strip()})"
    import onnxruntime as ort

    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return (
            f"the installed onnxruntime {ort.__version__} has no CUDAExecutionProvider "
            f"(providers: {', '.join(ort.get_available_providers())}); run "
            "bench/device/ocr_gpu.sh --install to put onnxruntime-gpu into .venv-gpu"
        )
    return None


class GpuSampler:
    """nvidia-smi's utilisation of one GPU, sampled every 100 ms while running."""

    def __init__(self, device: int) -> None:
        self.samples: list[int] = []
        self.process = subprocess.Popen(
            [
                "nvidia-smi",
                f"--id={device}",
                "--query-gpu=utilization.gpu",
                "--format=csv,noheader,nounits",
                "-lms",
                "100",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.strip().isdigit():
                self.samples.append(int(line.strip()))

    def stop(self) -> str:
        self.process.terminate()
        self.process.wait()
        self.reader.join(timeout=2)
        if not self.samples:
            return "no samples"
        mean = sum(self.samples) / len(self.samples)
        return f"{mean:.0f} % mean, {max(self.samples)} % peak ({len(self.samples)} samples)"


def corpus_lines(directory: Path, docs: int, max_pages: int, wanted: int) -> list[Any]:
    """The text-line crops of a generated corpus, repeated up to ``wanted`` lines."""
    from rayorch_cpp.workloads.ocr_pdf import samples
    from rayorch_cpp.workloads.ocr_pdf.stages import DetectLines, RenderPage

    documents = samples.make_corpus(directory, docs, seed=5, max_pages=max_pages)
    render, detect = RenderPage(150.0), DetectLines()
    lines: list[Any] = []
    for document in documents:
        for number in range(len(document.pages)):
            image = render.run([document.path], [number])
            lines += detect.run(image)[0][0]
            if len(lines) >= wanted:
                return lines[:wanted]
    if not lines:
        raise SystemExit("the generated corpus has no text lines")
    return [lines[i % len(lines)] for i in range(wanted)]


def recognition(lines: list[Any], batch: int, gpus: float, sample_gpu: bool) -> str:
    """Reads ``lines`` with one RecognizeLines actor at ``batch`` lines a call."""
    import rayorch_cpp as ro
    from rayorch_cpp.workloads.ocr_pdf.stages import RecognizeLines

    class Read(ro.Pipeline):
        def __init__(self) -> None:
            self.read = ro.Module(RecognizeLines, batch_size=batch, num_gpus=gpus, num_cpus=1)

        def forward(self, line: ro.Port) -> ro.Port:
            out: ro.Port = self.read(line)
            return out

    with ro.Executor(Read()) as executor:
        executor.run(lines[: max(batch, len(lines) // 8)], progress=False)  # warm-up
        sampler = GpuSampler(0) if sample_gpu else None
        start = time.monotonic()
        result = executor.run(lines, input_batch_size=max(batch, 256), progress=False)
        wall = time.monotonic() - start
        utilisation = sampler.stop() if sampler else "n/a (CPU)"
    calls = result.calls[0]
    return (
        f"batch {batch:4d}: {len(lines) / wall:9.1f} lines/s ({len(lines)} lines in "
        f"{wall:6.2f} s, {calls.rpcs} calls, fill {calls.mean_batch_fill:.2f}); GPU {utilisation}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--time-limit", type=float, default=480.0, help="seconds for everything")
    p.add_argument("--lines", type=int, default=2048)
    p.add_argument("--batches", default="1,8,32,128")
    p.add_argument("--docs", type=int, default=16)
    p.add_argument("--max-pages", type=int, default=20)
    p.add_argument("--pipeline-batch", type=int, default=128)
    p.add_argument("--recognize-replicas", type=int, default=2)
    a = p.parse_args()
    deadline = time.monotonic() + a.time_limit
    problem = cuda_problem()
    gpus = 0.0 if problem else 1.0
    if problem:
        print(f"ocr_gpu: no usable CUDA device: {problem}.")
        print("ocr_gpu: measuring on the CPU instead; these are NOT GPU figures.", flush=True)
    else:
        print(
            "ocr_gpu: "
            + subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
            .stdout.strip()
            .splitlines()[0],
            flush=True,
        )
    work = Path(tempfile.mkdtemp(prefix="ocr-gpu-"))
    lines = corpus_lines(work / "lines", 4, 6, a.lines)
    print(f"recognition stage: {len(lines)} text lines, 1 actor, num_gpus={gpus:g}", flush=True)
    for batch in (int(b) for b in a.batches.split(",")):
        if time.monotonic() > deadline - 60:
            print(f"batch {batch}: skipped, the time limit is near")
            continue
        print(recognition(lines, batch, gpus, sample_gpu=problem is None), flush=True)
    left = deadline - time.monotonic() - 10
    if left < 30:
        print("pipeline: skipped, the time limit is near")
        return
    out = work / "pipeline.json"
    command = [
        sys.executable,
        str(ROOT / "python" / "bench" / "ocr_pdf.py"),
        *("--docs", str(a.docs), "--max-pages", str(a.max_pages), "--seed", "5"),
        *("--work-dir", str(work / "corpus"), "--json", str(out)),
        *("--recognize-batch", str(a.pipeline_batch), "--detect-replicas", "1"),
        *("--recognize-replicas", str(a.recognize_replicas)),
        *("--recognize-gpus", f"{gpus / a.recognize_replicas:g}", "--detect-gpus", f"{gpus:g}"),
    ]
    print(f"pipeline: {' '.join(command)}", flush=True)
    try:
        subprocess.run(command, check=True, timeout=left, env=dict(os.environ))
    except subprocess.TimeoutExpired:
        print("pipeline: stopped at the time limit")
        return
    figures = json.loads(out.read_text())
    print(
        f"pipeline: {figures['pages']} pages, {figures['pages'] / figures['run_seconds']:.2f} "
        f"pages/s over the run ({figures['run_seconds']:.2f} s), "
        f"{figures['pages'] / figures['end_to_end_seconds']:.2f} pages/s with model loading; "
        f"recognition fill {figures['recognize_fill']:.2f}; on {'CPU' if problem else 'GPU'}"
    )


if __name__ == "__main__":
    main()
