"""What a benchmark run samples while it runs: the driver's resident memory and, where NVIDIA's
management library is installed, each visible GPU's utilisation and memory; on a thread of its
own, every ``interval_s``. Every probe is optional: without psutil or pynvml the profile says
so instead of failing the run."""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any


def _gpu_sample() -> dict[str, Any]:
    sample: dict[str, Any] = {"monotonic_s": time.monotonic(), "utilization": [], "memory_used": []}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            import pynvml
        pynvml.nvmlInit()
        try:
            for index in range(pynvml.nvmlDeviceGetCount()):
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                try:
                    utilization: int | None = int(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                except Exception:
                    utilization = None
                sample["utilization"].append(utilization)
                sample["memory_used"].append(int(pynvml.nvmlDeviceGetMemoryInfo(handle).used))
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        sample["utilization"], sample["memory_used"] = [], []
    return sample


class ResourceSampler:
    """Samples while started; ``stop()`` returns the profile (``status``: collected,
    unavailable with its ``detail``, or disabled)."""

    def __init__(self, *, enabled: bool, interval_s: float) -> None:
        if interval_s <= 0:
            raise ValueError("profile interval must be positive")
        self._enabled = enabled
        self._interval_s = interval_s
        self._detail = ""
        self._samples: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._process: Any = None
        self._rss_start = self._rss_peak = 0
        if not enabled:
            return
        try:
            import psutil

            self._process = psutil.Process()
            self._rss_start = self._rss_peak = int(self._process.memory_info().rss)
            self._thread = threading.Thread(
                target=self._loop, name="benchmark-sampler", daemon=True
            )
        except Exception as error:
            self._detail = f"{type(error).__name__}: {error}"

    def _capture(self) -> None:
        try:
            self._rss_peak = max(self._rss_peak, int(self._process.memory_info().rss))
            self._samples.append(_gpu_sample())
        except Exception:
            pass

    def _loop(self) -> None:
        while not self._stop.wait(self._interval_s):
            self._capture()

    def start(self) -> None:
        if self._thread is not None:
            self._thread.start()

    def stop(self) -> dict[str, Any]:
        if not self._enabled:
            return {"status": "disabled", "samples": []}
        if self._thread is None:
            return {"status": "unavailable", "detail": self._detail, "samples": []}
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=max(2.0, 2 * self._interval_s))
        self._capture()
        peaks: list[int] = []
        for sample in self._samples:
            for index, used in enumerate(sample["memory_used"]):
                if index == len(peaks):
                    peaks.append(used)
                else:
                    peaks[index] = max(peaks[index], used)
        return {
            "status": "collected",
            "driver_rss_start": self._rss_start,
            "driver_rss_peak": self._rss_peak,
            "visible_gpu_memory_peak": peaks,
            "samples": list(self._samples),
        }
