"""Word recall of a conversion's Markdown against each PDF's own text layer (pdftotext, the
document's oracle): for each PDF, the words of 3 or more letters of its text layer (case
folded, counted with multiplicity) found in OUT_DIR/<stem>.md.

  python python/bench/text_layer_recall.py OUT_DIR PDF...
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from pathlib import Path

WORD = re.compile(r"[A-Za-z]{3,}")


def words(text: str) -> collections.Counter[str]:
    return collections.Counter(w.lower() for w in WORD.findall(text))


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    out = Path(sys.argv[1])
    found = total = 0
    for pdf in map(Path, sys.argv[2:]):
        layer = subprocess.run(
            ["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
        ).stdout
        want = words(layer)
        got = words((out / f"{pdf.stem}.md").read_text(encoding="utf-8"))
        hit = sum(min(n, got[w]) for w, n in want.items())
        n = sum(want.values())
        found, total = found + hit, total + n
        print(f"{pdf.name}: recall {hit / max(n, 1):.4f} of {n} words")
    print(f"all: recall {found / max(total, 1):.4f} of {total} words")


if __name__ == "__main__":
    main()
