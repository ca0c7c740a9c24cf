#!/usr/bin/env bash
# Builds the Python package's self-contained wheel into dist/ (CMake option RAYORCH_WHEEL: fmt
# compiled in, libstdc++ and libgcc linked statically, the pdf2md and video stages left out), so
# that it installs on a machine without a compiler or any -dev package. The build backend comes
# from the project's venv (pinned in pyproject.toml's build-system table), nothing else is
# downloaded, and the build is incremental in build-wheel/.
#
#   scripts/build-wheel.sh           # writes dist/rayorch_cpp-<version>-<tag>.whl
#   VENV=/path/to/venv DIST=/path/to/dir scripts/build-wheel.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

PYTHON="${PYTHON:-python3}"
VENV="${VENV:-$root/.venv}"
DIST="${DIST:-$root/dist}"

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "build-wheel: creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
# The build requirements as pyproject.toml pins them; pip does nothing when they are present.
mapfile -t requires < <("$VENV/bin/python" -c 'import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["build-system"]["requires"]))')
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${requires[@]}"

export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}"
mkdir -p "$DIST"
rm -f "$DIST"/rayorch_cpp-*.whl
"$VENV/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-build-isolation \
  --no-deps --wheel-dir "$DIST" \
  -C cmake.define.RAYORCH_WHEEL=ON -C "build-dir=build-wheel/{wheel_tag}" "$root"
ls "$DIST"/rayorch_cpp-*.whl
