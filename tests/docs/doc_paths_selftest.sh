#!/usr/bin/env bash
# Self-test for doc_paths.sh: a tree whose docs name only paths that exist must pass; every
# planted fault (a stale path in docs/, README.md or python/README.md, a stale directory, a
# stale link target, a stale path in a code block, too few paths) must fail, naming the
# place; patterns, placeholders and prose that only look like paths must not be flagged.
#
# usage: doc_paths_selftest.sh PATH/TO/doc_paths.sh
set -euo pipefail

check="${1:-$(dirname "$0")/doc_paths.sh}"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

# shellcheck source=../support/selftest.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/selftest.sh"

make_clean_tree() {
  local t="$1"
  rm -rf "${t}"
  mkdir -p "${t}/docs" "${t}/src/runtime" "${t}/python/bench" "${t}/python/tests" \
    "${t}/tests/docs" "${t}/bench/peers" "${t}/.ci" "${t}/workloads"
  touch "${t}/src/runtime/engine.h" "${t}/src/runtime/rule_expand.cc" \
    "${t}/python/bench/ocr_pdf.py" "${t}/python/tests/test_api.py" "${t}/tests/docs/check.sh" \
    "${t}/bench/peers/setup.sh" "${t}/.ci/run" "${t}/workloads/common.h"
  # Paths read: 4 (line 3), 2 (line 4), 2 (line 5), 2 (line 6), 1 (line 7), 1 link (line 8),
  # 1 (the code block) = 13; lines 9-12 read nothing.
  cat >"${t}/docs/DESIGN.md" <<'MD'
# The design

The engine is `src/runtime/engine.h`; the rules are in `src/runtime/` (src/runtime, tests/docs/).
A sentence ends with src/runtime/engine.h. Another cites src/runtime/engine.h:12, and
(`python/bench/ocr_pdf.py`), `python/tests/test_api.py::test_run[local]`;
a node id python/tests/test_api.py::TestApi::test_x, an anchor docs/DESIGN.md#2-api, and
`.ci/run` (a dot directory).
See [the other page](OTHER.md#intro) and [peers](https://example.org/src/gone.h).
Not paths: src/runtime/rule_*.cc, tests/<dir>/<name>_test.cc, python/src/ray_pools.{h,cc},
src/..., tests/NAME/, OUT/file, python/IN_DIR, program <- runtime <- workloads/CLI,
.venv/bin/python, foo/src/gone.h, build/src/gone.h, $x/src/gone.h, https://x.org/tests/gone,
python/${name}.py, a lambda [](std::size_t row) and [&](int x), an empty link [](gone.md).

```
bench/peers/setup.sh --all
auto f = [](std::size_t row) { return row; };
auto g = [self](gone)(row);  // in code, not a link
```
MD
  # 2 paths, 1 link.
  cat >"${t}/docs/OTHER.md" <<'MD'
# Other

Back to [the design](DESIGN.md); benchmarks: `bench/peers/setup.sh` and bench/peers/.
MD
  # 2 paths, 1 link.
  cat >"${t}/README.md" <<'MD'
The design lives in [docs/DESIGN.md](docs/DESIGN.md); the page of choices is docs/OTHER.md.
MD
  # 1 path, 1 link.
  cat >"${t}/python/README.md" <<'MD'
The engine's design is `docs/DESIGN.md`; see [the other page](../docs/OTHER.md).
MD
  # Not a documentation file: never read.
  echo "src/gone.h" >"${t}/src/notes.md"
}

tree="${tmp}/tree"

make_clean_tree "${tree}"
# 13 + 3 + 3 + 2 = 21 paths and link targets.
expect_result "${tree}" 0 "a tree whose docs name existing paths passes" "(21 paths in 4 files)" \
  --min 21
expect_result "${tree}" 1 "too few paths fail" "found 21 path(s)" --min 22

# plant FILE LINE_TEXT DESCRIPTION NEEDLE  (the planted line is line 2 of FILE)
plant() {
  local file="$1" text="$2" what="$3" needle="$4"
  make_clean_tree "${tree}"
  mkdir -p "$(dirname "${tree}/${file}")"
  { echo "# planted"; echo "${text}"; } >"${tree}/${file}"
  expect_result "${tree}" 1 "${what}" "${file}:2: ${needle}"
}

plant docs/X.md "The engine is \`src/runtime/engin.h\`." "a stale path in docs/" \
  "names src/runtime/engin.h, but the repository has no such file"
plant docs/sub/Y.md "See python/bench/gone.py." "a stale path in a page under docs/sub/" \
  "names python/bench/gone.py,"
plant README.md "Run \`bench/peers/run.sh\`, then read docs/DESIGN.md." "a stale path in README.md" \
  "names bench/peers/run.sh,"
plant python/README.md "Tests: \`tests/workloads/test_ocr_pdf.py\` (and a Ray case)." \
  "a stale path in python/README.md" "names tests/workloads/test_ocr_pdf.py,"
plant docs/X.md "The checks live in \`tests/lint/\`." "a stale directory" \
  "names tests/lint/, but the repository has no such directory"
plant docs/X.md "The header \`src/runtime/engine.h/\` is a file." "a file named as a directory" \
  "names src/runtime/engine.h/, but the repository has no such directory"
plant docs/X.md "(see src/runtime/gone.h)." "a stale path in parentheses, before punctuation" \
  "names src/runtime/gone.h,"
plant docs/X.md "See python/tests/test_gone.py::test_run." "the file of a pytest node id" \
  "names python/tests/test_gone.py,"
plant docs/X.md "At src/runtime/gone.cc:42 the rule fires." "the file of a FILE:LINE" \
  "names src/runtime/gone.cc,"
plant docs/X.md "See [the engine](../src/runtime/gone.h) for details." \
  "a stale link target in docs/" "links to ../src/runtime/gone.h, but src/runtime/gone.h does not"
plant README.md "See [the page](docs/GONE.md#intro)." "a stale link target in README.md" \
  "links to docs/GONE.md#intro, but docs/GONE.md does not exist"
plant python/README.md "See [the design](docs/DESIGN.md)." \
  "a link resolves from its file's directory" \
  "links to docs/DESIGN.md, but python/docs/DESIGN.md does not exist"
plant docs/X.md "See [elsewhere](../../outside.md)." "a link that leaves the repository" \
  "links to ../../outside.md, which is outside the repository"
plant docs/X.md "[engine]: ../src/runtime/gone.h" "a stale reference-style link definition" \
  "links to ../src/runtime/gone.h,"
# A fenced code block is read too (its path sits on line 3).
make_clean_tree "${tree}"
printf '# planted\n```sh\nbench/peers/gone.sh --all\n```\n' >"${tree}/docs/X.md"
expect_result "${tree}" 1 "a stale path in a fenced code block" \
  "docs/X.md:3: names bench/peers/gone.sh,"

# A top-level directory is one the tree has: a new one counts without editing the check.
make_clean_tree "${tree}"
mkdir -p "${tree}/newtop"
touch "${tree}/newtop/here.txt"
printf '# planted\n`newtop/here.txt` and `newtop/gone.txt`\n' >"${tree}/docs/X.md"
expect_result "${tree}" 1 "a new top-level directory counts" "docs/X.md:2: names newtop/gone.txt,"

# Every problem is reported, not only the first.
make_clean_tree "${tree}"
printf '# planted\nsrc/a.h and src/b.h\n' >"${tree}/docs/X.md"
expect_result "${tree}" 1 "every stale path is reported" "docs/X.md:2: names src/b.h,"

# In a git work tree only tracked docs are read, and the top-level directories are those git
# tracks a file under.
if command -v git >/dev/null 2>&1; then
  make_clean_tree "${tree}"
  git -C "${tree}" init -q
  git -C "${tree}" add -A
  expect_result "${tree}" 0 "git tree: a clean tree passes" "(21 paths in 4 files)"
  printf '# planted\nsrc/gone.h\n' >"${tree}/docs/X.md"
  expect_result "${tree}" 0 "git tree: an untracked doc is not read" "(21 paths in 4 files)"
  git -C "${tree}" add docs/X.md
  expect_result "${tree}" 1 "git tree: a tracked doc is read" "docs/X.md:2: names src/gone.h,"
  git -C "${tree}" rm -q --cached docs/X.md
  mkdir -p "${tree}/scratch"
  touch "${tree}/scratch/here.txt"
  printf '\nscratch/gone.txt\n' >>"${tree}/docs/OTHER.md"
  expect_result "${tree}" 0 "git tree: an untracked directory is not a top-level one" \
    "(21 paths in 4 files)"
fi

# Usage errors are not a pass.
for args in "" "--min" "--min x ${tree}" "${tmp}/absent"; do
  rc=0
  # shellcheck disable=SC2086 # the arguments are meant to split
  bash "${check}" ${args} >/dev/null 2>&1 || rc=$?
  if [[ ${rc} -ne 2 ]]; then fail "doc_paths.sh ${args:-without arguments} must exit 2, got ${rc}"
  else echo "ok: usage error (${args:-no arguments})"; fi
done

if [[ ${failures} -gt 0 ]]; then
  echo "doc_paths selftest: ${failures} failure(s)" >&2
  exit 1
fi
echo "doc_paths selftest: OK"
