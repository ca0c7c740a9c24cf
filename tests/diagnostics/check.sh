#!/usr/bin/env bash
# Compile-time diagnostics of API misuse: each tests/diagnostics/cases/*.cc makes one mistake
# and names, on a `// expect: PHRASE` line, the phrase that the FIRST `error:` line of the
# compiler output must contain (a phrase of the static_assert written for that mistake).
# Optional `// expect-anywhere: PHRASE` lines must appear somewhere in the output.
# ok.cc (`// expect: compiles`) is the control: it must compile with the same flags.
#
# A misuse passes when
#   (a) compilation fails,
#   (b) the first line containing "error:" contains the expected phrase,
#   (c) the output is short: at most MAX_ERRORS lines contain "error:" and the whole output
#       has fewer than MAX_LINES lines. The bound is the point of the test: the helpful
#       message must be the first and nearly only thing the user reads.
#
# usage: check.sh CXX SOURCE_ROOT [--includes=DIR;DIR...] [EXTRA_COMPILER_FLAGS...]
#        (--includes: a CMake list of include directories, e.g. fmt's, each passed as -I)
set -uo pipefail

readonly MAX_ERRORS=3
readonly MAX_LINES=40

if [[ $# -lt 2 ]]; then
  echo "usage: $0 CXX SOURCE_ROOT [--includes=DIR;DIR...] [EXTRA_COMPILER_FLAGS...]" >&2
  exit 2
fi
cxx="$1"
root="$(cd "$2" && pwd)"
shift 2
extra=()
for arg in "$@"; do
  if [[ "${arg}" == --includes=* ]]; then
    IFS=';' read -r -a dirs <<<"${arg#--includes=}"
    for dir in "${dirs[@]}"; do
      # The compiler's own directories stay implicit: -I/usr/include breaks #include_next.
      case "${dir}" in
        "" | /usr/include | /usr/local/include) ;;
        *) extra+=(-I "${dir}") ;;
      esac
    done
  else
    extra+=("${arg}")
  fi
done
cases="${root}/tests/diagnostics/cases"

# Plain ASCII quotes and no colour, so the phrases match whatever the terminal.
export LC_ALL=C
flags=(-std=c++20 -fsyntax-only -fdiagnostics-color=never -Wall -Wextra -Wpedantic -Wshadow
  -I "${root}/include" -I "${cases}" "${extra[@]}")

failures=0
checked=0
fail() {
  echo "FAIL ${1}: ${2}"
  failures=$((failures + 1))
}

for snippet in "${cases}"/*.cc; do
  name="$(basename "${snippet}")"
  expect="$(sed -n 's|^// expect: ||p' "${snippet}" | head -n 1)"
  if [[ -z "${expect}" ]]; then
    fail "${name}" "no '// expect: PHRASE' line"
    continue
  fi
  checked=$((checked + 1))
  output="$("${cxx}" "${flags[@]}" "${snippet}" 2>&1)"
  rc=$?
  if [[ "${expect}" == "compiles" ]]; then
    if [[ ${rc} -ne 0 ]]; then
      fail "${name}" "the control does not compile:"
      echo "${output}"
    else
      echo "ok   ${name}: compiles"
    fi
    continue
  fi
  if [[ ${rc} -eq 0 ]]; then
    fail "${name}" "compiled, but it must be rejected"
    continue
  fi
  first="$(grep -m 1 'error:' <<<"${output}")"
  errors="$(grep -c 'error:' <<<"${output}")"
  lines="$(wc -l <<<"${output}")"
  problem=""
  if ! grep -qF -- "${expect}" <<<"${first}"; then
    problem+=" the first error does not say '${expect}';"
  fi
  while IFS= read -r also; do
    [[ -z "${also}" ]] && continue
    grep -qF -- "${also}" <<<"${output}" || problem+=" the output does not say '${also}';"
  done < <(sed -n 's|^// expect-anywhere: ||p' "${snippet}")
  if ((errors > MAX_ERRORS)); then
    problem+=" ${errors} error lines (at most ${MAX_ERRORS});"
  fi
  if ((lines >= MAX_LINES)); then
    problem+=" ${lines} lines of output (fewer than ${MAX_LINES});"
  fi
  if [[ -n "${problem}" ]]; then
    fail "${name}" "${problem}"
    echo "----- compiler output -----"
    echo "${output}"
    echo "---------------------------"
  else
    echo "ok   ${name}: ${errors} error line(s), ${lines} lines: ${first#*error: }"
  fi
done

if ((checked == 0)); then
  echo "FAIL: no cases under ${cases}"
  exit 1
fi
if ((failures > 0)); then
  echo "${failures} of ${checked} diagnostics cases failed"
  exit 1
fi
echo "all ${checked} diagnostics cases passed (bound: <= ${MAX_ERRORS} error lines, < ${MAX_LINES} lines)"
