#!/usr/bin/env bash
# Fails unless every shared library that the ELF files given need (their NEEDED entries) is
# part of the C or C++ runtime that every Linux system has: glibc (libc, libm and the libraries
# glibc 2.34 merged into libc), libstdc++, libgcc_s and the dynamic loader. Prints the entries.
#
#   tests/package/elf_needed.sh FILE...
set -euo pipefail

if ! command -v readelf > /dev/null; then
  echo "elf_needed: readelf not found (install binutils)" >&2
  exit 2
fi
(($#)) || { echo "usage: elf_needed.sh FILE..." >&2; exit 2; }

runtime='^(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux-x86-64|ld-linux-aarch64)\.so(\.[0-9]+)*$'
status=0
for file in "$@"; do
  needed="$(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')"
  if [[ -z "$needed" ]]; then
    echo "elf_needed: $file: no NEEDED entries (not a dynamically linked ELF file?)" >&2
    status=1
    continue
  fi
  while read -r lib; do
    if [[ "$lib" =~ $runtime ]]; then
      echo "$file: NEEDED $lib"
    else
      echo "$file: NEEDED $lib: not part of the C or C++ runtime" >&2
      status=1
    fi
  done <<< "$needed"
done
exit "$status"
