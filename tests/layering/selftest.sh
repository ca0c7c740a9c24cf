#!/usr/bin/env bash
# Self-test for check.sh: a clean tree must pass, every planted violation must fail.
#
# usage: selftest.sh PATH/TO/check.sh
set -euo pipefail

check="${1:-$(dirname "$0")/check.sh}"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

# shellcheck source=../support/selftest.sh
source "$(dirname "${BASH_SOURCE[0]}")/../support/selftest.sh"

make_clean_tree() {
  local t="$1"
  rm -rf "${t}"
  mkdir -p "${t}/src/api" "${t}/src/program" "${t}/src/runtime" "${t}/src/execution" \
    "${t}/include/rayorch/detail"
  cat >"${t}/src/api/outcome.cc" <<'CC'
#include "rayorch/outcome.h"
#include <rayorch/detail/erased.h>
#include <string>
CC
  cat >"${t}/src/program/graph.cc" <<'CC'
#include "program/graph.h"
#include <rayorch/rayorch.h>
#include <vector>
// #include "runtime/commented_out.h"
CC
  cat >"${t}/src/program/graph.h" <<'CC'
#pragma once
#include "program/types.h"
CC
  cat >"${t}/src/runtime/scheduler.cc" <<'CC'
#include "runtime/scheduler.h"
#include "program/graph.h"
#include "program/plan.h"
#include <rayorch/outcome.h>
CC
  mkdir -p "${t}/src/execution/backends"
  cat >"${t}/src/execution/backends/threads.cc" <<'CC'
#include "execution/worker_pool.h"
#include "execution/invoke.h"
#include "runtime/protocol.h"
#include "runtime/protocol_codec.h"
CC
  cat >"${t}/src/execution/executor.cc" <<'CC'
#include "execution/executor.h"
#include "runtime/scheduler.h"
#include "program/graph.h"
CC
  mkdir -p "${t}/python/src"
  cat >"${t}/python/src/bindings.cc" <<'CC'
#include "rayorch/executor.h"
#include <rayorch/detail/erased.h>
#include "execution/worker_pool.h"
#include "execution/driver.h"
#include "execution/invoke.h"
#include "runtime/protocol.h"
#include <runtime/protocol_codec.h>
#include "program/plan.h"
#include "program/plan_code.h"
#include "py_values.h"
#include "pdf2md/pdf2md.h"
CC
  cat >"${t}/include/rayorch/rayorch.h" <<'CC'
#pragma once
#include <rayorch/detail/config.h>
#include "rayorch/version.h"
#include <string>
CC
  touch "${t}/include/rayorch/detail/config.h"
  mkdir -p "${t}/workloads/synthetic"
  cat >"${t}/workloads/synthetic/documents.h" <<'CC'
#pragma once
#include <chrono>
CC
}

tree="${tmp}/tree"

make_clean_tree "${tree}"
expect_result "${tree}" 0 "clean tree passes"

# plant FILE LINE_TEXT DESCRIPTION  (the planted include lands on line 2)
plant() {
  local file="$1" text="$2" what="$3"
  make_clean_tree "${tree}"
  mkdir -p "$(dirname "${tree}/${file}")"
  { echo "// planted"; echo "${text}"; } >"${tree}/${file}"
  expect_result "${tree}" 1 "${what}" "${file}:2:"
}

plant src/api/bad.cc            '#include "program/logical.h"'      "api -> program"
plant src/api/bad2.cc           '#include <runtime/engine.h>'       "api -> runtime"
plant src/api/bad3.cc           '#include "execution/invoke.h"'     "api -> execution"
plant src/program/bad.cc        '#include "runtime/scheduler.h"'    "program -> runtime (quotes)"
plant src/program/bad.h         '#include <execution/executor.h>'   "program -> execution (angle brackets)"
plant src/program/sub/deep.cc   '  #  include "execution/x.h"'      "program -> execution (nested dir, spacing)"
plant src/program/rel.cc        '#include "../runtime/scheduler.h"' "program -> runtime (relative path)"
plant src/runtime/bad.cc        '#include "execution/executor.h"'   "runtime -> execution (quotes)"
plant src/runtime/bad.h         '#include <execution/executor.h>'   "runtime -> execution (angle brackets)"
plant include/rayorch/bad.h     '#include "program/graph.h"'        "public header -> program"
plant include/rayorch/bad2.h    '#include <runtime/scheduler.h>'    "public header -> runtime"
plant include/rayorch/detail/x.h '#include "execution/executor.h"'  "public header -> execution"
plant src/runtime/payload.cc    '#include "rayorch/detail/erased.h"' "runtime -> typed values"
plant src/runtime/code.h        '#include <program/plan_code.h>'    "runtime -> the plan's typed code"
plant src/runtime/all.cc        '#include <rayorch/rayorch.h>'      "runtime -> the umbrella header"
plant src/program/plan.h        '#include "program/logical.h"'      "plan -> logical program"
plant src/execution/backends/b.cc '#include "runtime/engine.h"'     "backend -> engine"
plant src/execution/backends/c.cc '#include "execution/driver.h"'   "backend -> driver"
plant src/execution/backends/d.cc '#include "runtime/protocols.h"'   "backend -> a non-protocol runtime header"
plant src/execution/backends/e.cc '#include "runtime/plan_state.h"'  "backend -> runtime state"
plant src/execution/backends/f.cc '#include "execution/observers/trace.h"' "backend -> observers"
plant python/src/a.cc            '#include "runtime/engine.h"'       "extension -> engine"
plant python/src/b.h             '#include <execution/run_state.h>' "extension -> driver state"
plant python/src/c.cc            '#include "src/program/logical.h"' "extension -> logical program (src/)"
plant python/src/g.cc            '#include "program/plans.h"'       "extension -> near-miss of the plan"
plant python/src/d.cc            '#include "execution/backends/backends.h"' "extension -> a backend"
plant python/src/e.cc            '#include "runtime/protocol_codecs.h"' "extension -> near-miss of an allowed header"
plant python/src/f.cc            '#include "api/type_names.h"'      "extension -> src/api"
plant workloads/synthetic/x.h   '#include "bench/workload.h"'       "synthetic -> bench"
plant workloads/synthetic/y.h   '#include "common/files.h"'         "synthetic -> a workload library"
plant workloads/synthetic/z.h   '#include "execution/driver.h"'     "synthetic -> engine internals"

# The rule name must be reported.
make_clean_tree "${tree}"
echo '#include "execution/executor.h"' >>"${tree}/src/runtime/scheduler.cc"
expect_result "${tree}" 1 "rule is reported" "src/runtime must not depend on execution"

# Missing argument is a usage error, not a pass.
rc=0
bash "${check}" >/dev/null 2>&1 || rc=$?
if [[ ${rc} -eq 0 ]]; then fail "check.sh without arguments must not succeed"; else echo "ok: usage error"; fi

if [[ ${failures} -gt 0 ]]; then
  echo "layering selftest: ${failures} failure(s)" >&2
  exit 1
fi
echo "layering selftest: OK"
