"""The output directory's lock (python/rayorch_cpp/_output_lock.py): one run per output
directory; released on close and when the holding process dies, even by SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rayorch_cpp._output_lock import OutputInUse, OutputLock


def test_a_second_lock_on_the_same_directory_is_refused_until_the_first_is_closed(
    tmp_path: Path,
) -> None:
    first = OutputLock(tmp_path, "ocr_pdf")
    with pytest.raises(OutputInUse, match=f"output directory {tmp_path} is in use by another "):
        OutputLock(tmp_path, "ocr_pdf")
    first.close()
    first.close()  # idempotent
    with OutputLock(tmp_path, "ocr_pdf"):
        pass
    assert sorted(os.listdir(tmp_path)) == []  # no lock file left behind


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(OutputInUse, match="cannot open output directory .*missing"):
        OutputLock(tmp_path / "missing", "ocr_pdf")


def test_a_killed_holder_releases_the_lock(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "from rayorch_cpp._output_lock import OutputLock\n"
        f"lock = OutputLock({str(tmp_path)!r}, 'ocr_pdf')\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(OutputInUse, match="in use by another ocr_pdf run"):
        OutputLock(tmp_path, "ocr_pdf")
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    with OutputLock(tmp_path, "ocr_pdf"):
        pass
