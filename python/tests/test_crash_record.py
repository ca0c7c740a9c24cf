"""The crash record (python/rayorch_cpp/_crash_record.py, docs/ISOLATION.md): a Module on
threads whose native code crashes the process leaves on stderr the Call, the Module, the
Entity keys of the Grains it ran and the Python stack, says that isolation="process" would
have contained it, and the process still ends by the signal. With isolation="process" the
same row fails alone and the run goes on. Each run happens in a child process."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import ctypes
import sys

import rayorch_cpp as ro
from rayorch_cpp import F


class SplitIntoPages:
    def run(self, docs):
        return [[f"{doc}:p{i}" for i in range(n)] for doc, n in docs]


class RecognisePageText:
    def run(self, pages):
        out = []
        for page in pages:
            if page == "b.pdf:p2":
                ctypes.string_at(0)  # a read through a null pointer, as a broken native library
            out.append(page.upper())
        return out


isolation = sys.argv[1]
split = ro.Module(SplitIntoPages)
ocr = ro.Module(RecognisePageText).ray_options(batch_size=1, isolation=isolation)
ex = ro.Executor(lambda doc: F.reduce(ocr(F.expand(split(doc)))))
result = ex.run([("a.pdf", 2), ("b.pdf", 4), ("c.pdf", 1)], progress=False)
print("outcomes", ["present" if isinstance(o, list) else "failed" for o in result.outputs])
"""


def run_child(tmp_path: Path, isolation: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return subprocess.run(
        [sys.executable, str(script), isolation],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )


def test_a_segfault_on_a_thread_names_the_call_the_grain_and_the_python_stack(
    tmp_path: Path,
) -> None:
    child = run_child(tmp_path, "threads")
    assert child.returncode == -signal.SIGSEGV, (child.returncode, child.stderr)
    err = child.stderr
    # Row 1 (b.pdf), its page 2: Entity key 1/2.
    assert (
        "rayorch: SIGSEGV (invalid memory access) on an actor thread running Call "
        "'RecognisePageText#1' (Module<RecognisePageText>) on Grain 1/2 of input batch 0." in err
    ), err
    assert 'isolation="process"' in err, err
    # faulthandler's Python stack follows the record: the UDF's frame, in this file.
    assert err.index("rayorch: SIGSEGV") < err.index("Fatal Python error: Segmentation fault"), err
    crash_line = next(i for i, line in enumerate(CHILD.splitlines()) if "string_at(0)" in line)
    assert f'child.py", line {crash_line + 1} in run' in err, err
    assert "outcomes" not in child.stdout


def test_with_isolation_process_the_same_row_fails_alone_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    child = run_child(tmp_path, "process")
    assert child.returncode == 0, child.stderr
    assert "outcomes ['present', 'failed', 'present']" in child.stdout, (child.stdout, child.stderr)
    assert "rayorch: SIGSEGV" not in child.stderr, child.stderr
