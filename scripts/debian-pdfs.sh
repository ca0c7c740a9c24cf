#!/usr/bin/env bash
# Collects real PDFs that Debian ships, typeset by different systems, into DIR (default
# /tmp/debian-pdfs), for the OCR benchmarks (python/bench/ocr_pdf.py --pdfs DIR). The packages
# are downloaded with apt-get download and unpacked there, not installed.
#
#   bash scripts/debian-pdfs.sh [DIR]
set -euo pipefail

DIR=${1:-/tmp/debian-pdfs}
# package:path inside it (a gzipped PDF is unpacked)[:name in DIR]  # typesetting system
DOCUMENTS=(
  "shared-mime-info:usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"  # LaTeX (pdfTeX)
  "libtasn1-doc:usr/share/doc/libtasn1-doc/libtasn1.pdf"                       # Texinfo (pdfTeX)
  "xorg-docs:usr/share/doc/xorg-docs/ReleaseNotes.pdf.gz"                      # DocBook (Apache FOP)
  "groff:usr/share/doc/groff-base/examples/mom/mom-pdf.pdf.gz"                 # groff (gropdf)
  "debian-reference-en:usr/share/debian-reference/debian-reference.en.pdf"     # DBLaTeX (XeTeX)
  "dblatex-doc:usr/share/doc/dblatex/manual.pdf.gz:dblatex-manual.pdf"         # DBLaTeX (pdfTeX)
  "cups-filters:usr/share/cups/data/form_english.pdf"                          # LibreOffice Writer
  "cups-filters:usr/share/cups/data/default-testpage.pdf"                      # cairo
)

mkdir -p "$DIR/.debs"
cd "$DIR/.debs"
for entry in "${DOCUMENTS[@]}"; do
  IFS=: read -r package path name <<<"$entry"
  if ! ls "${package}"_*.deb >/dev/null 2>&1; then
    apt-get download "$package" >/dev/null 2> >(grep -v "unsandboxed" >&2)
  fi
  unpacked="unpacked-$package"
  [ -d "$unpacked" ] || dpkg -x "${package}"_*.deb "$unpacked"
  name=${name:-$(basename "$path" .gz)}
  if [[ $path == *.gz ]]; then
    gunzip -c "$unpacked/$path" >"$DIR/$name.tmp"
  else
    cp "$unpacked/$path" "$DIR/$name.tmp"
  fi
  mv "$DIR/$name.tmp" "$DIR/$name"
  echo "$DIR/$name ($package)"
done
