#!/usr/bin/env bash
# Every repository path that the documentation names exists.
#
# The docs point readers at files: "`src/runtime/engine.h`", "python/bench/ocr_pdf.py",
# "`tests/docs/`". When a file moves or goes, the sentence that names it goes stale without
# anyone noticing; this check makes the move fail a test instead.
#
# Files read: the Markdown files under docs/ plus README.md and python/README.md; those git
# tracks when SOURCE_ROOT is the top of a git work tree, else those that exist under it.
#
# A path is a token that starts with one of the repository's top-level directories (those
# git tracks a file under, else every directory at the top minus .git, build*, .venv*; a new
# one counts without editing this script), not glued to a word, "/" or "." before it,
# followed by "/" and then anything up to white space, a backtick, a quote, a bracket, a
# parenthesis, "|", "," or ";". In such a token:
#   - an anchor ("#...") and whatever follows a ":" (FILE:LINE, a pytest node id
#     "file.py::test") are dropped, then trailing ".", ":" and "!"/"?" (sentence punctuation);
#   - a token holding "*", "<", ">", "{", "}", "$" or "..." is a pattern or a placeholder
#     (src/runtime/rule_*.cc, tests/<dir>/<name>_test.cc, python/src/ray_pools.{h,cc}) and
#     is not read; so is one with a component in capitals and digits only, without a dot
#     (OUT, IN_DIR, NAME: placeholders; "workloads/CLI": prose "A/B"). No tracked path has
#     such a component; DESIGN.md has a dot, so it is read;
#   - it resolves when that file exists relative to the repository root, or, for a token
#     ending in "/", that directory.
# Paths in fenced code blocks are read too (directory listings, command lines).
#
# Markdown links outside code blocks ("[text](target)", "[id]: target") are read as links,
# not as tokens: a relative target resolves from the directory of the file that holds it,
# one starting with "/" from the repository root; targets with a scheme (https:, mailto:),
# anchors within the page ("#...") and targets with white space are not read. A target must
# stay inside the repository.
#
# Prints FILE:LINE: ... for each problem.
#
# usage: doc_paths.sh [--min N] SOURCE_ROOT
#   --min N   fail unless at least N paths and link targets were read (guards against a
#             pattern that silently matches nothing); default 1.
# exit 0 = every path resolves, 1 = problems found, 2 = usage
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
export LC_ALL=C

problems=0
problem() {
  echo "$*"
  problems=$((problems + 1))
}

in_git=0
top="$(git -C "${root}" rev-parse --show-toplevel 2>/dev/null || true)"
if [[ -n "${top}" && "$(cd "${top}" && pwd)" == "${root}" ]]; then
  in_git=1
fi

# The documentation files to read, one per line, relative to the root.
list_docs() {
  if [[ ${in_git} -eq 1 ]]; then
    git -C "${root}" ls-files -- 'docs/*.md' README.md python/README.md
  else
    (cd "${root}" && {
      [[ -d docs ]] && find docs -type f -name '*.md'
      for f in README.md python/README.md; do [[ -f "${f}" ]] && echo "${f}"; done
      true
    }) | sort
  fi
}

# The top-level directories, one per line.
list_top_dirs() {
  if [[ ${in_git} -eq 1 ]]; then
    git -C "${root}" ls-files | grep / | cut -d/ -f1 | sort -u
  else
    (cd "${root}" && find . -mindepth 1 -maxdepth 1 -type d \
      ! -name .git ! -name 'build*' ! -name '.venv*' | sed 's|^\./||' | sort)
  fi
}

dirs="$(list_top_dirs | sed 's/[][\.*^$+?(){}|]/\\&/g' | paste -sd '|' -)"
if [[ -z "${dirs}" ]]; then
  dirs='$^' # no top-level directory: matches nothing, and --min reports it
fi

token_re='(^|[^A-Za-z0-9_./-])(('"${dirs}"')/[^][:space:]`"'"'"'()|,;]*)'
link_re='\[[^]]+\]\(([^()[:space:]]+)([[:space:]]+"[^"]*")?\)'
refdef_re='^[[:space:]]{0,3}\[[^]]+\]:[[:space:]]*([^[:space:]]+)'
fence_re='^[[:space:]]*(```|~~~)'
pattern_re='[*<>{}$]|\.\.\.|(^|/)[A-Z0-9_]*[A-Z][A-Z0-9_]*(/|$)'

found=0

# check_token FILE LINE TOKEN: a path named in the text, relative to the root.
check_token() {
  local file="$1" line="$2" path="$3"
  path="${path%%#*}"
  path="${path%%:*}"
  if [[ "${path}" =~ ${pattern_re} ]]; then
    return
  fi
  while [[ "${path}" == *[.:\!?] ]]; do path="${path%?}"; done
  if [[ "${path}" =~ ${pattern_re} ]]; then
    return
  fi
  found=$((found + 1))
  if [[ "${path}" == */ ]]; then
    [[ -d "${root}/${path}" ]] && return
    problem "${file}:${line}: names ${path}, but the repository has no such directory"
  else
    [[ -e "${root}/${path}" ]] && return
    problem "${file}:${line}: names ${path}, but the repository has no such file or directory"
  fi
}

# check_link FILE LINE TARGET: a link target, relative to FILE's directory.
check_link() {
  local file="$1" line="$2" target="$3" path resolved
  target="${target#<}"
  target="${target%>}"
  if [[ "${target}" =~ ^[A-Za-z][A-Za-z0-9+.-]*: || "${target}" == \#* ]]; then
    return
  fi
  path="${target%%#*}"
  path="${path%%\?*}"
  [[ -n "${path}" ]] || return
  found=$((found + 1))
  if [[ "${path}" == /* ]]; then
    resolved="$(realpath -m -- "${root}${path}")"
  else
    resolved="$(realpath -m -- "${root}/$(dirname "${file}")/${path}")"
  fi
  if [[ "${resolved}" != "${root}" && "${resolved}" != "${root}/"* ]]; then
    problem "${file}:${line}: links to ${target}, which is outside the repository"
  elif [[ ! -e "${resolved}" ]]; then
    problem "${file}:${line}: links to ${target}, but ${resolved#"${root}/"} does not exist"
  fi
}

docs="$(list_docs)"
while IFS= read -r file; do
  [[ -n "${file}" && -f "${root}/${file}" ]] || continue
  n=0
  fenced=0
  while IFS= read -r text || [[ -n "${text}" ]]; do
    n=$((n + 1))
    if [[ "${text}" =~ ${fence_re} ]]; then
      fenced=$((1 - fenced))
      continue
    fi
    if [[ ${fenced} -eq 0 ]]; then
      if [[ "${text}" =~ ${refdef_re} ]]; then
        check_link "${file}" "${n}" "${BASH_REMATCH[1]}"
        text=""
      fi
      while [[ "${text}" =~ ${link_re} ]]; do
        match="${BASH_REMATCH[0]}"
        check_link "${file}" "${n}" "${BASH_REMATCH[1]}"
        # Keep the link's text (it may name a path), drop its target.
        text="${text/"${match}"/"${match%%](*}]"}"
      done
    fi
    rest="${text}"
    while [[ "${rest}" =~ ${token_re} ]]; do
      match="${BASH_REMATCH[0]}"
      check_token "${file}" "${n}" "${BASH_REMATCH[2]}"
      rest="${rest#*"${match}"}"
    done
  done <"${root}/${file}"
done <<<"${docs}"

if [[ ${found} -lt ${min} ]]; then
  problem "found ${found} path(s) in the docs, expected at least ${min}: is the pattern still" \
    "matching how the docs name files?"
fi

if [[ ${problems} -gt 0 ]]; then
  echo "doc_paths: ${problems} problem(s) found" >&2
  exit 1
fi
echo "doc_paths: OK (${found} paths in $(grep -c . <<<"${docs}") files)"
