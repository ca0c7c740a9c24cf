#!/usr/bin/env bash
# What a Python user gets from the wheel: builds it (scripts/build-wheel.sh), installs it with
# nothing else (no index, no dependencies) into a brand-new venv, and from outside the checkout
# runs python/examples/quickstart.py with the installed package, checks that a workload stage
# the wheel leaves out fails with the libraries it needs, and that the extension needs no
# shared library beyond the C and C++ runtime (tests/package/elf_needed.sh).
#
#   tests/package/wheel_check.sh     # VENV: the project venv that builds the wheel
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${VENV:-$root/.venv}"
dist="$(mktemp -d)"
work="$(mktemp -d)"
trap 'rm -rf "$dist" "$work"' EXIT

DIST="$dist" VENV="$VENV" bash "$root/scripts/build-wheel.sh"
# The interpreter the wheel was built for, in a venv of its own.
"$("$VENV/bin/python" -c 'import sys; print(sys._base_executable)')" -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install --quiet --disable-pip-version-check --no-index --no-deps \
  --find-links "$dist" rayorch-cpp

# A copy of the example in an empty folder: nothing of the checkout is on sys.path.
cp "$root/python/examples/quickstart.py" "$work/"
cd "$work"
out="$(env -u PYTHONPATH "$py" quickstart.py)"
expected="['PAGE 0PAGE 1PAGE 2', 'PAGE 0', '']"
if [[ "$out" != *"$expected"* ]]; then
  printf 'wheel_check: quickstart printed:\n%s\nwithout %s\n' "$out" "$expected" >&2
  exit 1
fi

env -u PYTHONPATH "$py" - <<'PY'
import sys
from pathlib import Path

import rayorch_cpp as ro

package = Path(ro.__file__).resolve()
assert package.is_relative_to(Path(sys.prefix).resolve()), f"imported from {package}"
try:
    ro.CppModule("Pdf2mdOcr")
except ValueError as error:
    assert "pdf2md workload" in str(error) and "poppler-cpp" in str(error), error
else:
    raise AssertionError("the wheel has the pdf2md stages")
print(f"wheel_check: rayorch_cpp from {package.parent}")
PY

core=("$work"/venv/lib/python3*/site-packages/rayorch_cpp/_core*.so)
bash "$root/tests/package/elf_needed.sh" "${core[@]}"
# The check itself can fail: the development build's extension (scripts/python-env.sh, which
# `make test` runs first) links the shared fmt.
shopt -s nullglob
dev_core=("$VENV"/lib/python3*/site-packages/rayorch_cpp/_core*.so)
if ((${#dev_core[@]})) && bash "$root/tests/package/elf_needed.sh" "${dev_core[@]}" > /dev/null 2>&1; then
  echo "wheel_check: elf_needed.sh accepts ${dev_core[0]}, which links libfmt" >&2
  exit 1
fi
echo "wheel_check: passed ($(basename "$dist"/rayorch_cpp-*.whl))"
