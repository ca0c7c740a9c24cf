#!/usr/bin/env bash
# Throughput of `rayorch pdf2md` on a generated long-tailed corpus, compared with
#   - the physical limit: the sum of single-page OCR times divided by the cores, and
#   - the usual shell pipeline: pdftoppm + tesseract, one process chain per document,
#     run with `xargs -P <cores>`.
# Both sides render in grayscale at the same DPI and run Tesseract single-threaded.
#
# usage: bench/pdf2md_compare.sh [--docs N] [--seed S] [--dpi D] [--jobs J] [--repeat R]
#                                [--bin PATH] [--work DIR] [-- EXTRA_PDF2MD_ARGS...]
# On a shared machine, run it under `nice -n -20` (as root) so other work does not skew it.
set -euo pipefail

DOCS=40
SEED=1
DPI=150
JOBS=$(nproc)
REPEAT=1
BIN=build/rayorch
WORK=out/bench-pdf2md
EXTRA=()

while [[ $# -gt 0 ]]; do
  case "$1" in
    --docs) DOCS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --dpi) DPI=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "pdf2md_compare: unknown argument $1" >&2; exit 2 ;;
  esac
done

for tool in "$BIN" pdftoppm tesseract jq xargs awk; do
  if ! command -v "$tool" >/dev/null 2>&1 && [[ ! -x "$tool" ]]; then
    echo "pdf2md_compare: $tool not found (build with 'make build', install with 'make deps')" >&2
    exit 2
  fi
done

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a / b }'; }
percent() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", 100 * a / b }'; }

rm -rf "$WORK"
mkdir -p "$WORK"
"$BIN" make-samples "$WORK/corpus" --docs "$DOCS" --seed "$SEED"
PAGES=$(jq '.total_pages' "$WORK/corpus/manifest.json")
echo "corpus: $DOCS documents + 1 corrupt, $PAGES pages, page counts $(jq -c '[.documents[].pages]' "$WORK/corpus/manifest.json")"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); jobs $JOBS, dpi $DPI"

# The physical limit: one OCR actor measures every page's OCR time without contention
# between OCR engines; the sum over the cores is the best any schedule can do.
"$BIN" pdf2md "$WORK/corpus" -o "$WORK/limit" --dpi "$DPI" --ocr-replicas 1 --no-progress -q \
  --report "$WORK/limit.json" >"$WORK/limit.log" || [[ $? -eq 1 ]]
OCR_SUM=$(jq '[.calls[] | select(.call | startswith("OcrPage")) | .busy_seconds] | add' "$WORK/limit.json")
# Render busy time, whether pages render one Grain each (RenderPage) or a document per RPC.
RENDER_SUM=$(jq '[.calls[] | select(.call | startswith("Render")) | .busy_seconds] | add // 0' "$WORK/limit.json")
LIMIT=$(ratio "$PAGES" "$(ratio "$OCR_SUM" "$JOBS")")
printf 'limit: single-page OCR total %.2f s (render %.2f s) / %d cores = %.3f pages/s\n' \
  "$OCR_SUM" "$RENDER_SUM" "$JOBS" "$LIMIT"

convert_one() {
  # One document: rasterise all pages, then one tesseract process over the page list.
  local pdf=$1 out=$2 dpi=$3
  local stem tmp
  stem=$(basename "$pdf" .pdf)
  tmp=$(mktemp -d)
  if pdftoppm -r "$dpi" -gray "$pdf" "$tmp/p" 2>/dev/null; then
    ls "$tmp"/p-*.pgm | sort >"$tmp/list.txt"
    OMP_THREAD_LIMIT=1 tesseract "$tmp/list.txt" "$out/$stem" quiet 2>/dev/null
  fi
  rm -rf "$tmp"
}
export -f convert_one

for run in $(seq 1 "$REPEAT"); do
  rm -rf "$WORK/rayorch" "$WORK/shell"
  mkdir -p "$WORK/shell"

  t0=$(now)
  "$BIN" pdf2md "$WORK/corpus" -o "$WORK/rayorch" --dpi "$DPI" --ocr-replicas "$JOBS" \
    --no-progress -q --report "$WORK/rayorch.json" "${EXTRA[@]}" >"$WORK/rayorch-$run.log" ||
    [[ $? -eq 1 ]]
  t1=$(now)
  RUN_S=$(jq '.pdf2md.run_seconds' "$WORK/rayorch.json")
  FIRST_S=$(jq '.pdf2md.first_document_seconds' "$WORK/rayorch.json")
  WALL_R=$(elapsed "$t0" "$t1")

  t0=$(now)
  find "$WORK/corpus" -maxdepth 1 -name '*.pdf' | sort |
    xargs -P "$JOBS" -I{} bash -c 'convert_one "$1" "$2" "$3"' _ {} "$WORK/shell" "$DPI" || true
  t1=$(now)
  WALL_S=$(elapsed "$t0" "$t1")

  R_RUN=$(ratio "$PAGES" "$RUN_S")
  R_WALL=$(ratio "$PAGES" "$WALL_R")
  S_WALL=$(ratio "$PAGES" "$WALL_S")
  printf 'run %d: rayorch %.3f pages/s (run %.2f s; %.3f pages/s over %.2f s wall incl. startup; first document after %.2f s) = %.1f%% of limit\n' \
    "$run" "$R_RUN" "$RUN_S" "$R_WALL" "$WALL_R" "$FIRST_S" "$(percent "$R_RUN" "$LIMIT")"
  printf 'run %d: xargs -P%d pdftoppm+tesseract %.3f pages/s (%.2f s wall) = %.1f%% of limit; rayorch/shell = %.2fx (wall %.2fx)\n' \
    "$run" "$JOBS" "$S_WALL" "$WALL_S" "$(percent "$S_WALL" "$LIMIT")" \
    "$(ratio "$R_RUN" "$S_WALL")" "$(ratio "$R_WALL" "$S_WALL")"
done

"$BIN" check-samples "$WORK/corpus" "$WORK/rayorch" || true
