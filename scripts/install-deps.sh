#!/usr/bin/env bash
# Installs the Debian packages needed to build and test RayOrch C++.
# Idempotent: when everything is already installed it only queries dpkg.
set -euo pipefail

PACKAGES=(
  build-essential
  cmake
  ninja-build
  pkg-config
  clang-format
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  libfmt-dev
  nlohmann-json3-dev
  libcli11-dev
  libpoppler-cpp-dev
  poppler-utils
  jq
  libtesseract-dev
  tesseract-ocr
  tesseract-ocr-eng
  libcairo2-dev
  libavformat-dev
  libavcodec-dev
  libswscale-dev
  libavutil-dev
  # Real material for the video workload's footage corpus (rayorch make-footage): PDF manuals
  # and pictures shipped by Debian packages.
  libtasn1-doc
  shared-mime-info
  desktop-base
  libleptonica-dev
  # The browser the report page is tested in (tests/browser/report_page.sh).
  chromium
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  # 'dpkg -s' also succeeds for removed-but-configured packages; require "install ok installed".
  if ! dpkg -s "${pkg}" 2>/dev/null | grep -q '^Status: install ok installed$'; then
    missing+=("${pkg}")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "install-deps: missing packages (${missing[*]}) and not root without sudo" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${#missing[@]} missing package(s): ${missing[*]}"
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${#missing[@]} package(s): ${missing[*]}"
