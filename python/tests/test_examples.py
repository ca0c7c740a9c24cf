"""The README's Python quickstart (python/examples/quickstart.py) runs and prints what the
README says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_example_matches_the_readme() -> None:
    script = ROOT / "python" / "examples" / "quickstart.py"
    out = subprocess.run(
        [sys.executable, str(script)], check=True, capture_output=True, text=True, timeout=120
    ).stdout
    assert "p2 expand d1 <- [p1] => expanded-output-layout" in out
    assert "['PAGE 0PAGE 1PAGE 2', 'PAGE 0', '']" in out
    assert sorted(line for line in out.splitlines() if line[:1].isdigit()) == [
        "0 PAGE 0PAGE 1PAGE 2",
        "1 PAGE 0",
        "2 ",
    ]
    # The README shows the same code.
    readme = (ROOT / "README.md").read_text()
    code = script.read_text()
    assert code.strip() in readme


def test_pdf2md_example_converts_a_sample_corpus(tmp_path: Path) -> None:
    import pytest

    import rayorch_cpp as ro

    if "Pdf2mdOcr" not in ro.cpp_udfs():
        pytest.skip("built without the pdf2md stages")
    script = ROOT / "python" / "examples" / "pdf2md.py"
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "in"), str(tmp_path / "md"), "--samples", "3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1, out.stderr  # the sample corpus has one corrupt PDF
    assert "corrupt.pdf" in out.stderr
    written = sorted(p.name for p in (tmp_path / "md").glob("*.md"))
    assert len(written) == 3
    assert all("## Page 1" in (tmp_path / "md" / name).read_text() for name in written)
