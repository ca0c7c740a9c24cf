#!/usr/bin/env bash
# Self-test for design_refs.sh: a tree whose citations all resolve must pass, and every
# planted fault (a missing section, a missing design, a duplicate heading, a stray link,
# too few citations) must fail, naming the place.
#
# The citations below are assembled from ${word} so that this file itself cites nothing.
#
# usage: selftest.sh PATH/TO/design_refs.sh
set -euo pipefail

check="${1:-$(dirname "$0")/design_refs.sh}"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
word="DESIGN"

# shellcheck source=../support/selftest.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/selftest.sh"

make_clean_tree() {
  local t="$1"
  rm -rf "${t}"
  mkdir -p "${t}/docs" "${t}/src/runtime" "${t}/python/pkg" "${t}/tests"
  cat >"${t}/docs/DESIGN.md" <<'MD'
# The design

## 1. The problem
## 3. API
### 3.1 UDFs
### 3.2 Modules
### 3.3 Pipelines
## 5. Runtime semantics
### 5.4 Reduce
## 6. Execution
### 6.2 The worker protocol
MD
  cat >"${t}/src/runtime/engine.h" <<CC
// The engine (${word} 5): no payloads, only bindings (${word} 6.2).
// A reduce (${word} §5.4) and the operators (${word} 3.1-3.3).
CC
  cat >"${t}/python/pkg/api.py" <<PY
"""Front end (${word} 3.2, ${word} 5, "Contract")."""
PY
  cat >"${t}/README.md" <<MD
The design lives in [docs/DESIGN.md](docs/DESIGN.md); see ${word}.md §6 and ${word} 3.3 and 6.
MD
  cat >"${t}/docs/OTHER.md" <<MD
See [the design](DESIGN.md#62-the-worker-protocol) (${word} section 1).
MD
}

tree="${tmp}/tree"

make_clean_tree "${tree}"
# 5 + 6.2 + 5.4 + 3.1 + 3.3 + 3.2 + 5 + 6 + 3.3 + 6 + 1 = 11 citations.
expect_result "${tree}" 0 "a tree whose citations resolve passes" "(11 citations," --min 11
expect_result "${tree}" 1 "too few citations fail" "found 11 citation(s)" --min 12

# plant FILE LINE_TEXT DESCRIPTION NEEDLE  (the planted line is line 2 of FILE)
plant() {
  local file="$1" text="$2" what="$3" needle="$4"
  make_clean_tree "${tree}"
  mkdir -p "$(dirname "${tree}/${file}")"
  { echo "// planted"; echo "${text}"; } >"${tree}/${file}"
  expect_result "${tree}" 1 "${what}" "${file}:2: ${needle}"
}

plant src/runtime/bad.cc "// see ${word} 9.4"      "a section that does not exist" \
  "cites ${word} section 9.4"
plant src/runtime/sub.cc "// see ${word} 5.7"      "a subsection the design lacks" \
  "cites ${word} section 5.7"
plant src/x.h            "// (${word} §7)"         "the section sign form" \
  "cites ${word} section 7"
plant docs/X.md          "See ${word}.md §8."      "the DESIGN.md form" "cites ${word} section 8"
plant docs/Y.md          "See ${word}.md section 2." "the 'section' form" \
  "cites ${word} section 2"
plant tests/t.cc         "// (${word} 4, 5)"       "the first of a list" "cites ${word} section 4"
plant tests/u.cc         "// (${word} 5, 4)"       "a later member of a list" \
  "cites ${word} section 4"
plant tests/v.cc         "// (${word} 3.4 and 6)"  "the 'and' form" "cites ${word} section 3.4"
plant tests/w.cc         "// (${word} 3.1-3.9)"    "the end of a range" \
  "cites ${word} section 3.9"
plant python/pkg/m.py    "# ${word} 6.21"          "a number that only prefixes a section" \
  "cites ${word} section 6.21"
plant README.md          "[design](other/${word}.md)" "a link to another DESIGN.md" \
  "links to other/${word}.md"
plant docs/Z.md          "[design](../${word}.md)" "a link that misses docs/" \
  "links to ../${word}.md"

# The design itself missing.
make_clean_tree "${tree}"
rm "${tree}/docs/DESIGN.md"
expect_result "${tree}" 1 "a missing design fails" "docs/DESIGN.md: missing"

# Two headings with one number.
make_clean_tree "${tree}"
echo "### 5.4 Reduce, again" >>"${tree}/docs/DESIGN.md"
expect_result "${tree}" 1 "a duplicate heading number fails" "more than one heading is numbered 5.4"

# Unnumbered headings only.
make_clean_tree "${tree}"
printf '# Design\n## Problem\n' >"${tree}/docs/DESIGN.md"
expect_result "${tree}" 1 "a design without numbered headings fails" "no numbered heading"

# In a git work tree only tracked files count: an untracked bad citation is not read, a
# tracked one is.
if command -v git >/dev/null 2>&1; then
  make_clean_tree "${tree}"
  git -C "${tree}" init -q
  git -C "${tree}" add -A
  printf '// planted\n// %s 9.9\n' "${word}" >"${tree}/src/untracked.cc"
  expect_result "${tree}" 0 "git tree: an untracked file is not read" "(11 citations,"
  git -C "${tree}" add src/untracked.cc
  expect_result "${tree}" 1 "git tree: a tracked file is read" \
    "src/untracked.cc:2: cites ${word} section 9.9"
fi

# Missing argument is a usage error, not a pass.
rc=0
bash "${check}" >/dev/null 2>&1 || rc=$?
if [[ ${rc} -ne 2 ]]; then fail "design_refs.sh without arguments must exit 2, got ${rc}"; else
  echo "ok: usage error"
fi

if [[ ${failures} -gt 0 ]]; then
  echo "design_refs selftest: ${failures} failure(s)" >&2
  exit 1
fi
echo "design_refs selftest: OK"
