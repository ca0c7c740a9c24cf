#!/usr/bin/env bash
# Creates the project's Python virtual environment (.venv, git-ignored) with pinned tools and
# installs the rayorch-cpp package into it from this checkout. Re-running is cheap: the venv
# and its pinned tools are kept, and the extension is rebuilt incrementally in build-python/.
#
#   scripts/python-env.sh            # create/update .venv and install the package
#   PYTHON=python3.12 scripts/python-env.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

PYTHON="${PYTHON:-python3}"
VENV="${VENV:-$root/.venv}"

# Pinned versions: the build backend and bindings generator (also pinned in pyproject.toml's
# build-system table), the test runner, the linter/formatter, the type checker, and Ray for
# the Ray backend and its tests, numpy for the tests of array values (the package itself
# does not need it), cloudpickle, the package's one dependency (isolation="process"), and the
# OCR stack of the Python document workload (the `ocr` extra of pyproject.toml,
# rayorch_cpp.workloads.ocr_pdf: the ONNX runtime, the PP-OCRv4 models inside the rapidocr
# wheel, the PDF renderer), so its tests and benchmark run; pyarrow for the Parquet readers and
# sinks (the `parquet` extra, rayorch_cpp.io).
PINNED=(
  "scikit-build-core==1.1.2"
  "nanobind==3.1.0"
  "pytest==9.0.3"
  "ruff==0.17.5"
  "mypy==2.4.1"
  "ray[default]==2.60.0"
  "numpy==2.2.6"
  "cloudpickle==3.1.3"
  "onnxruntime==1.31.1"
  "rapidocr-onnxruntime==1.4.4"
  "pypdfium2==5.15.2"
  "pyarrow==26.0.1"
)

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "python-env: creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi

# Install the pinned tools only when one is missing or at another version.
missing=()
for spec in "${PINNED[@]}"; do
  name="${spec%%==*}"
  name="${name%%\[*}" # an extra's packages are checked below
  want="${spec##*==}"
  have="$("$VENV/bin/python" -c "import importlib.metadata as m
try: print(m.version('$name'))
except m.PackageNotFoundError: print('')")"
  [[ "$have" == "$want" ]] || missing+=("$spec")
done
# ray[default] adds the job server and its client (python -m rayorch_cpp submit, its tests).
if [[ " ${missing[*]-} " != *" ray[default]==2.60.0 "* ]] &&
  ! "$VENV/bin/python" -c "import aiohttp, aiohttp_cors" 2>/dev/null; then
  missing+=("ray[default]==2.60.0")
fi
if ((${#missing[@]})); then
  echo "python-env: installing ${missing[*]}"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${missing[@]}"
fi

# The build dependencies are already in the venv: no isolated build environment, nothing
# downloaded again.
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
echo "python-env: installing rayorch-cpp from $root"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
  --no-deps "$root"
