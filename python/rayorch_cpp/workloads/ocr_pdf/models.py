"""The PP-OCRv4 models of the ``ocr`` extra and the onnxruntime sessions that run them.

The models are the ONNX files inside the installed ``rapidocr-onnxruntime`` wheel (detection,
recognition; the recognition dictionary is in the recognition model's metadata): nothing is
downloaded. A session's threads follow its actor's resources (``rayorch_cpp.replica_context()``):
an actor of a Module with ``num_cpus=k`` runs ``k`` intra-op threads and one inter-op thread,
so actors that share a machine together use the CPUs their Modules ask for, and
``num_gpus > 0`` selects onnxruntime's CUDA execution provider on the actor's device."""

from __future__ import annotations

import importlib.util
import math
import os
from pathlib import Path
from typing import Any

from ... import replica_context

OCR_EXTRA_HINT = "install the ocr extra: pip install 'rayorch-cpp[ocr]'"
CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"

MODEL_FILES = {
    "detection": "ch_PP-OCRv4_det_infer.onnx",
    "recognition": "ch_PP-OCRv4_rec_infer.onnx",
}


class OcrStackMissing(ImportError):
    """A package of the ``ocr`` extra is not installed."""


def require_ocr_stack() -> None:
    """Raises OcrStackMissing naming the missing packages of the ``ocr`` extra."""
    wanted = {
        "numpy": "numpy",
        "onnxruntime": "onnxruntime",
        "rapidocr_onnxruntime": "rapidocr-onnxruntime",
        "pypdfium2": "pypdfium2",
    }
    missing = [dist for module, dist in wanted.items() if importlib.util.find_spec(module) is None]
    if missing:
        raise OcrStackMissing(f"the OCR workload needs {', '.join(missing)}: {OCR_EXTRA_HINT}")


def model_path(model: str) -> Path:
    """The ONNX file of ``model`` ("detection" or "recognition") inside the installed wheel."""
    spec = importlib.util.find_spec("rapidocr_onnxruntime")
    if spec is None or spec.origin is None:
        raise OcrStackMissing(f"rapidocr-onnxruntime is not installed: {OCR_EXTRA_HINT}")
    path = Path(spec.origin).parent / "models" / MODEL_FILES[model]
    if not path.is_file():
        raise OcrStackMissing(
            f"the {model} model {path.name} is missing from the installed rapidocr-onnxruntime "
            f"({path.parent}); reinstall it: {OCR_EXTRA_HINT}"
        )
    return path


def intra_op_threads(num_cpus: float) -> int:
    """The intra-op threads of an actor that asks for ``num_cpus`` CPUs: at least one, a
    fractional request rounded up."""
    return max(1, math.ceil(num_cpus))


def cuda_device_index(device: str) -> int:
    """onnxruntime's CUDA ``device_id`` of a replica device: its position among
    CUDA_VISIBLE_DEVICES when that is set (the CUDA runtime numbers only those), else the
    device number itself."""
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d]
    if visible:
        return visible.index(device) if device in visible else 0
    return int(device) if device.isdigit() else 0


def providers_for(num_gpus: float, devices: tuple[str, ...], available: list[str]) -> list[Any]:
    """The execution providers of an actor's session: CUDA on its device when it asks for
    GPUs, else the CPU. Raises RuntimeError when it asks for GPUs that onnxruntime cannot
    use, rather than running on the CPU unnoticed."""
    if num_gpus <= 0:
        return [CPU_PROVIDER]
    if CUDA_PROVIDER not in available:
        raise RuntimeError(
            f"the Module asks for num_gpus={num_gpus:g}, but the installed onnxruntime has no "
            f"{CUDA_PROVIDER} (available: {', '.join(available)}); install onnxruntime-gpu in "
            "place of onnxruntime (pip uninstall onnxruntime; pip install onnxruntime-gpu), or "
            "set num_gpus=0 to run on the CPU"
        )
    device = cuda_device_index(devices[0]) if devices else 0
    return [(CUDA_PROVIDER, {"device_id": device}), CPU_PROVIDER]


def open_session(model: str) -> Any:
    """An onnxruntime InferenceSession of ``model`` sized by the calling actor's resources
    (called in a UDF constructor; outside an actor: one thread on the CPU)."""
    import onnxruntime as ort

    context = replica_context()
    num_cpus = context.num_cpus if context is not None else 1.0
    num_gpus = context.num_gpus if context is not None else 0.0
    devices = context.devices if context is not None else ()
    options = ort.SessionOptions()
    options.intra_op_num_threads = intra_op_threads(num_cpus)
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # Threads that spin between calls would take CPU from the other actors on the machine.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    providers = providers_for(num_gpus, devices, ort.get_available_providers())
    if num_gpus > 0 and hasattr(ort, "preload_dlls"):
        # onnxruntime-gpu installed with its cuda/cudnn extras finds the CUDA libraries of
        # those wheels only once they are preloaded (system-wide ones are found anyway).
        ort.preload_dlls()
    return ort.InferenceSession(str(model_path(model)), sess_options=options, providers=providers)


def session_threads(session: Any) -> int:
    """The intra-op threads a session was built with (for tests and reports)."""
    return int(session.get_session_options().intra_op_num_threads)


def recognition_characters(session: Any) -> list[str]:
    """The recognition model's CTC alphabet: index 0 the blank, then the dictionary stored in
    the model's metadata, then the space (as the model was trained)."""
    meta = session.get_modelmeta().custom_metadata_map
    if "character" not in meta:
        raise RuntimeError("the recognition model carries no character dictionary")
    return ["", *meta["character"].splitlines(), " "]
