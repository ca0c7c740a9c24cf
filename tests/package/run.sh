#!/usr/bin/env bash
# Installs a finished rayorch build into a scratch prefix, then configures,
# builds and runs tests/package/consumer against the installed package.
#
# usage: run.sh BUILD_DIR CONSUMER_SRC CXX_COMPILER GENERATOR [BUILD_TYPE] [SANITIZERS]
set -euo pipefail

if [[ $# -lt 4 ]]; then
  echo "usage: $0 BUILD_DIR CONSUMER_SRC CXX_COMPILER GENERATOR [BUILD_TYPE] [SANITIZERS]" >&2
  exit 2
fi

build_dir="$(cd "$1" && pwd)"
consumer_src="$(cd "$2" && pwd)"
cxx="$3"
generator="$4"
build_type="${5:-RelWithDebInfo}"
sanitizers="${6:-}"
cmake_bin="${CMAKE_COMMAND:-cmake}"

work="$(mktemp -d "${build_dir}/package-consumer.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
prefix="${work}/prefix"

echo "== install ${build_dir} -> ${prefix}"
"${cmake_bin}" --install "${build_dir}" --prefix "${prefix}"

for f in include/rayorch/rayorch.h; do
  if [[ ! -f "${prefix}/${f}" ]]; then
    echo "package_consumer: missing installed file ${f}" >&2
    exit 1
  fi
done
if ! compgen -G "${prefix}/lib*/cmake/rayorch/rayorchConfig.cmake" >/dev/null; then
  echo "package_consumer: rayorchConfig.cmake was not installed" >&2
  exit 1
fi
if [[ -x "${build_dir}/rayorch" && ! -x "${prefix}/bin/rayorch" ]]; then
  echo "package_consumer: the rayorch CLI was built but not installed" >&2
  exit 1
fi

extra_flags=()
if [[ -n "${sanitizers}" ]]; then
  san="-fsanitize=${sanitizers} -fno-omit-frame-pointer"
  extra_flags+=("-DCMAKE_CXX_FLAGS=${san}" "-DCMAKE_EXE_LINKER_FLAGS=${san}")
fi

echo "== configure consumer"
"${cmake_bin}" -S "${consumer_src}" -B "${work}/build" -G "${generator}" \
  -DCMAKE_CXX_COMPILER="${cxx}" \
  -DCMAKE_BUILD_TYPE="${build_type}" \
  -DCMAKE_PREFIX_PATH="${prefix}" \
  -DCMAKE_FIND_PACKAGE_PREFER_CONFIG=ON \
  "${extra_flags[@]}"

echo "== build consumer"
"${cmake_bin}" --build "${work}/build"

echo "== run consumer"
"${work}/build/consumer"
echo "package_consumer: OK"
