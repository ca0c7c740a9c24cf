#!/usr/bin/env bash
# The OCR workload on a GPU machine in one command with a time limit (bench/device/ocr_gpu.py:
# the recognition stage at batch 1/8/32/128, lines/s and GPU utilisation, then the whole
# pipeline's pages/s). Without a usable CUDA device it says so and measures on the CPU.
#
#   bench/device/ocr_gpu.sh [--install] [--time-limit SECONDS] [ocr_gpu.py options...]
#
# Needs .venv (scripts/python-env.sh). --install makes .venv-gpu: a venv that sees .venv's
# packages (a .pth file) and has onnxruntime-gpu of the same version as onnxruntime in front
# of them, so .venv itself keeps its CPU onnxruntime; later runs use .venv-gpu when it exists.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
limit=480
install=0
args=()
while (($#)); do
  case "$1" in
    --install) install=1 ;;
    --time-limit) limit="$2"; shift ;;
    *) args+=("$1") ;;
  esac
  shift
done

base="$root/.venv/bin/python"
[[ -x "$base" ]] || { echo "ocr_gpu: $base is missing: run scripts/python-env.sh first" >&2; exit 2; }
gpu_venv="$root/.venv-gpu"
if ((install)) && [[ ! -x "$gpu_venv/bin/python" ]]; then
  version="$("$base" -c 'import onnxruntime; print(onnxruntime.__version__)')"
  "$base" -m venv --without-pip "$gpu_venv" 2>/dev/null || "$base" -m venv "$gpu_venv"
  site_base="$("$base" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  site_gpu="$("$gpu_venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "$site_base" > "$site_gpu/base-venv.pth"
  echo "ocr_gpu: installing onnxruntime-gpu==$version into $gpu_venv"
  "$base" -m pip --python "$gpu_venv/bin/python" install --quiet --disable-pip-version-check \
    "onnxruntime-gpu[cuda,cudnn]==$version"
fi
python="$base"
[[ -x "$gpu_venv/bin/python" ]] && python="$gpu_venv/bin/python"
echo "ocr_gpu: $python, time limit ${limit} s"
# The script keeps 60 s for its last phase itself; timeout is the hard stop.
exec timeout --signal=INT --kill-after=30 "$limit" \
  "$python" "$root/bench/device/ocr_gpu.py" --time-limit "$((limit - 15))" "${args[@]}"
