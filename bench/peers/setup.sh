#!/usr/bin/env bash
# Creates .venv-peers/ at the repository root with the pinned peer engines (Ray Data, Daft
# and the reference implementation `rayorch` on the same Ray) used by `rayorch bench compare`,
# and the OCR stack's pins for python/bench/ocr_peers.py. Idempotent: re-running only installs
# what changed.
#
# usage: bench/peers/setup.sh [PYTHON]     (PYTHON defaults to python3, needs >= 3.10)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
python="${1:-python3}"
venv="${root}/.venv-peers"

if [[ ! -x "${venv}/bin/python" ]]; then
  "${python}" -m venv "${venv}"
fi
"${venv}/bin/python" -m pip install --quiet --upgrade pip
"${venv}/bin/python" -m pip install --quiet -r "${here}/requirements.txt"
"${venv}/bin/python" - <<'PY'
import importlib.metadata

import daft
import ray

reference = importlib.metadata.version("rayorch")
print(f"peers ready: ray {ray.__version__}, daft {daft.__version__}, rayorch {reference}")
PY
