#!/usr/bin/env bash
# What pdf2md's run journal costs: alternating conversions of one generated corpus with the
# journal (the default) and with --no-journal, each timed for wall clock and the CPU time of
# the whole process (workers included), then the medians and the Markdown of both compared.
#
# usage: bench/pdf2md_journal.sh [--docs N] [--seed S] [--pairs P] [--bin PATH] [--work DIR]
# On a shared machine, run it under `nice -n -20` (as root) so other work does not skew it.
set -euo pipefail

DOCS=40
SEED=1
PAIRS=4
BIN=build/rayorch
WORK=out/bench-pdf2md-journal

while [[ $# -gt 0 ]]; do
  case "$1" in
    --docs) DOCS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --pairs) PAIRS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "pdf2md_journal: unknown argument $1" >&2; exit 2 ;;
  esac
done
for tool in "$BIN" /usr/bin/time awk sort diff; do
  if ! command -v "$tool" >/dev/null 2>&1 && [[ ! -x "$tool" ]]; then
    echo "pdf2md_journal: $tool not found (build with 'make build', install with 'make deps')" >&2
    exit 2
  fi
done

rm -rf "$WORK"
mkdir -p "$WORK"
"$BIN" make-samples "$WORK/corpus" --docs "$DOCS" --seed "$SEED"
: >"$WORK/times"
for ((i = 1; i <= PAIRS; i++)); do
  for mode in journal no-journal; do
    rm -rf "$WORK/out-$mode"
    flags=(--no-progress -q)
    [[ $mode == no-journal ]] && flags+=(--no-journal)
    # Exit status 1 is expected: the corpus has a corrupt file.
    /usr/bin/time -f "$mode %e %U %S" -a -o "$WORK/times" \
      "$BIN" pdf2md "$WORK/corpus" -o "$WORK/out-$mode" "${flags[@]}" >/dev/null || true
    echo "pair $i $(tail -n 1 "$WORK/times") load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for mode in journal no-journal; do
  wall=$(awk -v m="$mode" '$1 == m { print $2 }' "$WORK/times" | median)
  cpu=$(awk -v m="$mode" '$1 == m { print $3 + $4 }' "$WORK/times" | median)
  echo "$mode: median wall ${wall} s, median CPU ${cpu} s"
  eval "wall_${mode//-/_}=$wall cpu_${mode//-/_}=$cpu"
done
awk -v a="$wall_journal" -v b="$wall_no_journal" -v c="$cpu_journal" -v d="$cpu_no_journal" \
  'BEGIN { printf "journal overhead: wall %+.1f %%, CPU %+.1f %% (target <= 3 %%)\n", 100 * (a / b - 1), 100 * (c / d - 1) }'
if diff -r -x .pdf2md-journal -x _manifest.json "$WORK/out-journal" "$WORK/out-no-journal" >/dev/null; then
  echo "outputs: identical"
else
  echo "outputs: DIFFER" && exit 1
fi
