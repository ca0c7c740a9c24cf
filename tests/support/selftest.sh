# Shared by the self-tests of the tree's shell checks (tests/docs, tests/layering): each plants
# faults in a scratch tree and expects the check to fail naming them. Source it after setting
# `check` (the check script under test); it defines `failures`, `fail` and `expect_result`.

failures=0

# fail MESSAGE...: records a failed expectation (the self-test exits 1 at its end).
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect_result TREE EXPECTED_RC DESCRIPTION [EXPECTED_OUTPUT_SUBSTRING [ARGS...]]: runs
# `bash ${check} ARGS... TREE` and expects its exit status, and the substring in its output.
expect_result() {
  local tree="$1" expected="$2" what="$3" needle="${4:-}"
  shift 4 || shift $#
  local out rc=0
  out="$(bash "${check}" "$@" "${tree}" 2>&1)" || rc=$?
  if [[ ${rc} -ne ${expected} ]]; then
    fail "${what}: expected exit ${expected}, got ${rc}"$'\n'"${out}"
    return
  fi
  if [[ -n "${needle}" && "${out}" != *"${needle}"* ]]; then
    fail "${what}: output lacks '${needle}'"$'\n'"${out}"
    return
  fi
  echo "ok: ${what}"
}
