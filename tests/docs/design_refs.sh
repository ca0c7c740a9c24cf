#!/usr/bin/env bash
# Every citation of the design names a section that docs/DESIGN.md has.
#
# Sources, tests and docs cite the design by section number: the word DESIGN (or DESIGN.md),
# optionally followed by a section sign or the word "section", then a number such as 5 or
# 6.2; further numbers may follow in a list or a range ("4, 5", "3.4 and 6", "3.1-3.3").
# A citation resolves when docs/DESIGN.md has a Markdown heading that starts with that
# number ("## 5. Runtime semantics", "### 6.2 The worker protocol").
#
# It also checks that docs/DESIGN.md exists, that no two of its headings share a number,
# and that every Markdown link to a file named DESIGN.md points at docs/DESIGN.md.
#
# Files: those git tracks when SOURCE_ROOT is the top of a git work tree, else every
# regular file under it (minus .git, build*, .venv*). Prints FILE:LINE for each problem.
#
# usage: design_refs.sh [--min N] SOURCE_ROOT
#   --min N   fail unless at least N citations were found (guards against a pattern that
#             silently matches nothing); default 1.
# exit 0 = every citation resolves, 1 = problems found, 2 = usage
set -euo pipefail

min=1
if [[ $# -ge 2 && "$1" == "--min" ]]; then
  min="$2"
  shift 2
fi
if [[ $# -ne 1 || ! -d "$1" || ! "${min}" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 [--min N] SOURCE_ROOT" >&2
  exit 2
fi
root="$(cd "$1" && pwd)"
design="docs/DESIGN.md"
export LC_ALL=C

problems=0
problem() {
  echo "$*"
  problems=$((problems + 1))
}

if [[ ! -f "${root}/${design}" ]]; then
  echo "${design}: missing: the design must live in the repository (every citation of it" \
    "names a section there)"
  echo "design_refs: ${design} is missing" >&2
  exit 1
fi

# The section numbers of the design's headings, one per line.
sections="$(grep -E '^#{1,6}[[:space:]]+[0-9]+(\.[0-9]+)*\.?([[:space:]]|$)' "${root}/${design}" |
  sed -E 's/^#+[[:space:]]+([0-9]+(\.[0-9]+)*).*/\1/' || true)"
if [[ -z "${sections}" ]]; then
  problem "${design}: no numbered heading (expected headings such as '## 5. Runtime semantics')"
fi
while IFS= read -r dup; do
  [[ -n "${dup}" ]] && problem "${design}: more than one heading is numbered ${dup}"
done <<<"$(sort <<<"${sections}" | uniq -d)"

# The files to scan, NUL-separated, relative to the root.
list_files() {
  local top
  top="$(git -C "${root}" rev-parse --show-toplevel 2>/dev/null || true)"
  if [[ -n "${top}" && "$(cd "${top}" && pwd)" == "${root}" ]]; then
    git -C "${root}" ls-files -z
  else
    (cd "${root}" && find . \( -name .git -o -name 'build*' -o -name '.venv*' \) -prune -o \
      -type f -print0 | sed -z 's|^\./||')
  fi
}

number='[0-9]+(\.[0-9]+)*'
sep='([[:space:]]*(,|and|or|to|-|–)[[:space:]]*(§[[:space:]]*)?'"${number}"')*'
prefix='DESIGN(\.md)?[[:space:]]*(§|sections?[[:space:]]+|section[[:space:]]*§)?[[:space:]]*'
citation="${prefix}${number}${sep}"

# grep_files ARGS...: grep over the scanned files, printing FILE:LINE:MATCH.
grep_files() {
  list_files | (cd "${root}" && xargs -0 -r grep -nHIoE "$@" -- 2>/dev/null) || true
}

found=0
while IFS= read -r hit; do
  [[ -n "${hit}" ]] || continue
  file="${hit%%:*}"
  rest="${hit#*:}"
  line="${rest%%:*}"
  text="${rest#*:}"
  # The numbers after the word DESIGN (".md" holds none).
  for n in $(grep -oE "${number}" <<<"${text#DESIGN}"); do
    found=$((found + 1))
    if ! grep -qxF -e "${n}" <<<"${sections}"; then
      problem "${file}:${line}: cites DESIGN section ${n}, but ${design} has no heading" \
        "numbered ${n} (in: ${text})"
    fi
  done
done <<<"$(grep_files -e "${citation}")"

# Markdown links to a file named DESIGN.md must reach the repository's own.
while IFS= read -r link; do
  [[ -n "${link}" ]] || continue
  file="${link%%:*}"
  rest="${link#*:}"
  line="${rest%%:*}"
  target="${rest#*](}"
  target="${target%)}"
  target="${target%%#*}"
  resolved="$(cd "${root}/$(dirname "${file}")" && realpath -m -- "${target}")"
  if [[ "${resolved}" != "${root}/${design}" ]]; then
    problem "${file}:${line}: links to ${target}, which is not ${design}"
  fi
done <<<"$(grep_files --include='*.md' -e '\]\(([^)#[:space:]]*/)?DESIGN\.md(#[^)]*)?\)')"

if [[ ${found} -lt ${min} ]]; then
  problem "found ${found} citation(s) of the design, expected at least ${min}: is the pattern" \
    "still matching how the sources cite it?"
fi

if [[ ${problems} -gt 0 ]]; then
  echo "design_refs: ${problems} problem(s) found" >&2
  exit 1
fi
echo "design_refs: OK (${found} citations, $(wc -l <<<"${sections}") sections)"
