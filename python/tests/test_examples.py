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
