#!/usr/bin/env bash
# Enforces the module layering of the source tree:
#
#   src/api/        must not include program/..., runtime/... or execution/...
#                   (it defines what include/rayorch declares, from public headers only)
#   src/program/    must not include runtime/... or execution/...
#   src/runtime/    must not include execution/...
#   include/rayorch must not include program/..., runtime/... or execution/...
#
# and the seams of the worker protocol (DESIGN 6.2):
#
#   src/runtime/    must not include anything that can dereference a payload: the typed
#                   value machinery (rayorch/detail/erased.h, udf_traits.h, rayorch/column.h)
#                   or the plan's typed code (program/plan_code.h). The engine decides every
#                   rule from reports; only the worker boundary touches values.
#   src/program/plan.h must stay plain data (no rayorch/detail/erased.h, graph.h, logical.h).
#   backend files (src/execution/backends/...) must not include the engine or the run's
#                   driver state (runtime/... other than the protocol, execution/driver.h,
#                   execution/run_state.h, execution/run/..., execution/observers/...): a
#                   backend only runs invocations and speaks the protocol (runtime/protocol.h
#                   and its byte codec runtime/protocol_codec.h); it holds no driver logic.
#
# and the Python extension (python/src), which binds the engine through its public headers
# (include/rayorch/...) and may include from src/ exactly these interface headers:
#
#   execution/worker_pool.h    the WorkerPools interface the Ray backend implements
#   execution/block_store.h    the BlockStore interface the Ray backend's object-store store
#                              implements (the driver stores and resolves blocks through it)
#   execution/actor_block_cache.h  the driver's record of which blocks each remote actor holds;
#                              backend-neutral bookkeeping the Ray pools use to send a block once
#   execution/driver.h         the one driver, which runs a plan on any WorkerPools (the Ray
#                              backend's pools are attached to it there)
#   execution/invoke.h         the worker boundary: runs one invocation on a UDF instance
#                              (what every backend's worker calls, a Ray actor's too)
#   runtime/protocol.h         the worker protocol's messages (invocations, reports)
#   runtime/protocol_codec.h   their bytes, which cross to the Ray actors
#   program/plan.h             the compiled plan's plain data (its pools and their options),
#                              which Program.pools() lists
#   program/plan_code.h        the plan's typed code (factories, invokers, codecs per pool),
#                              from which a Ray actor builds its pool's UDF instance
#
#                   and nothing else of src/ (the engine, the driver's state, the compiler,
#                   the value store, src/api).
#
# and the seam of the synthetic document workload:
#
#   workloads/synthetic/ is included by both the benchmarks (bench/) and the Python extension
#                   (python/src/cpp_udfs.h), so it depends on neither, nor on another workload
#                   (common/, pdf2md/, video/: their libraries are optional) or the engine's
#                   internals: the Python extension builds it without any of them.
#
# Both #include "x/..." and #include <x/...> are checked; a leading "src/" or
# "../" components are also recognised. Prints FILE:LINE for each violation.
#
# usage: check.sh SOURCE_ROOT      exit 0 = clean, 1 = violations, 2 = usage
set -euo pipefail

if [[ $# -ne 1 || ! -d "$1" ]]; then
  echo "usage: $0 SOURCE_ROOT" >&2
  exit 2
fi
root="$(cd "$1" && pwd)"

violations=0

# check DIR RULE FORBIDDEN_PREFIX...
check() {
  local dir="$1" rule="$2"
  shift 2
  [[ -d "${root}/${dir}" ]] || return 0
  local alternatives
  alternatives="$(IFS='|'; echo "$*")"
  local pattern="^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"](\\.\\./)*(src/)?(${alternatives})/"
  local hits
  hits="$(cd "${root}" && grep -rnIE --include='*.h' --include='*.hh' --include='*.hpp' \
            --include='*.hxx' --include='*.inl' --include='*.ipp' --include='*.inc' \
            --include='*.c' --include='*.cc' --include='*.cpp' --include='*.cxx' \
            -e "${pattern}" "${dir}" || true)"
  if [[ -n "${hits}" ]]; then
    while IFS= read -r hit; do
      # hit is FILE:LINE:TEXT
      local file="${hit%%:*}" rest="${hit#*:}"
      local line="${rest%%:*}" text="${rest#*:}"
      echo "${file}:${line}: layering violation (${rule}): ${text#"${text%%[![:space:]]*}"}"
      violations=$((violations + 1))
    done <<<"${hits}"
  fi
}

# check_file_includes FILE_OR_DIR RULE REGEX: forbids includes of exact header paths.
check_headers() {
  local target="$1" rule="$2" regex="$3"
  [[ -e "${root}/${target}" ]] || return 0
  local pattern="^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"](\.\./)*(src/)?(${regex})[>\"]"
  local hits
  hits="$(cd "${root}" && grep -rnHIE --include="*.h" --include="*.cc" -e "${pattern}" "${target}" || true)"
  if [[ -n "${hits}" ]]; then
    while IFS= read -r hit; do
      local file="${hit%%:*}" rest="${hit#*:}"
      local line="${rest%%:*}" text="${rest#*:}"
      echo "${file}:${line}: layering violation (${rule}): ${text#"${text%%[![:space:]]*}"}"
      violations=$((violations + 1))
    done <<<"${hits}"
  fi
}

# check_allowlist DIR RULE ALLOWED_REGEX PREFIX...: forbids includes under the PREFIX
# directories except the headers matching ALLOWED_REGEX (a path such as runtime/protocol\.h).
check_allowlist() {
  local dir="$1" rule="$2" allowed="$3"
  shift 3
  [[ -d "${root}/${dir}" ]] || return 0
  local alternatives
  alternatives="$(IFS='|'; echo "$*")"
  local pattern="^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"](\\.\\./)*(src/)?(${alternatives})/"
  local allow="^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"](\\.\\./)*(src/)?(${allowed})[>\"]"
  local hits
  hits="$(cd "${root}" && grep -rnHIE --include='*.h' --include='*.cc' --include='*.cpp' \
            -e "${pattern}" "${dir}" || true)"
  if [[ -n "${hits}" ]]; then
    while IFS= read -r hit; do
      local file="${hit%%:*}" rest="${hit#*:}"
      local line="${rest%%:*}" text="${rest#*:}"
      grep -qE -e "${allow}" <<<"${text}" && continue
      echo "${file}:${line}: layering violation (${rule}): ${text#"${text%%[![:space:]]*}"}"
      violations=$((violations + 1))
    done <<<"${hits}"
  fi
}

check src/api         "src/api defines the public headers from public headers only" \
  program runtime execution
check src/program     "src/program must not depend on runtime or execution" runtime execution
check src/runtime     "src/runtime must not depend on execution"            execution
check include/rayorch "public headers must not include internal program/runtime/execution headers" \
  program runtime execution
check workloads/synthetic "workloads/synthetic is shared by bench and the Python extension" \
  program runtime execution bench python common pdf2md video
check_headers src/runtime "src/runtime must not include what can dereference a payload" \
  'rayorch/detail/erased\.h|rayorch/detail/udf_traits\.h|rayorch/column\.h|rayorch/detail/graph\.h|rayorch/rayorch\.h|rayorch/executor\.h|rayorch/module\.h|rayorch/ops\.h|rayorch/program\.h|program/plan_code\.h|program/logical\.h'
check_headers src/program/plan.h "the runtime plan must stay plain data" \
  'rayorch/detail/erased\.h|rayorch/detail/graph\.h|program/logical\.h'
check_headers src/execution/backends "a backend runs invocations and holds no driver logic" \
  'runtime/([a-oq-z][a-z_]*|p[a-qs-z][a-z_]*|pr[a-np-z][a-z_]*|pro[a-su-z][a-z_]*|protocol_?[a-bd-z][a-z_]*)\.h|execution/driver\.h|execution/run_state\.h|execution/run/[a-z_]+\.h|execution/observers/[a-z_]+\.h'
check_allowlist python/src \
  "the Python extension uses the public headers and the execution interfaces only" \
  'execution/worker_pool\.h|execution/worker_server\.h|execution/block_store\.h|execution/actor_block_cache\.h|execution/driver\.h|execution/invoke\.h|runtime/protocol\.h|runtime/protocol_codec\.h|program/plan\.h|program/plan_code\.h' \
  api program runtime execution

if [[ ${violations} -gt 0 ]]; then
  echo "layering: ${violations} violation(s) found" >&2
  exit 1
fi
echo "layering: OK"
