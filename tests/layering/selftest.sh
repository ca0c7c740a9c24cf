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
#include "execution/cores.h"
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
plant python/src/h.cc            '#include "execution/driver.h"'    "extension -> the driver (execution/cores.h instead)"
plant python/src/i.cc            '#include "execution/run/pool_sizing.h"' "extension -> pool_sizing.h directly"
plant workloads/synthetic/x.h   '#include "bench/workload.h"'       "synthetic -> bench"
plant workloads/synthetic/y.h   '#include "common/files.h"'         "synthetic -> a workload library"
plant workloads/synthetic/z.h   '#include "execution/driver.h"'     "synthetic -> engine internals"

# --- What a file reaches through includes ---------------------------------------------------

# plant_files WHAT EXPECTED_RC NEEDLE FILE TEXT [FILE TEXT]...: a clean tree plus each FILE
# ("// planted", then TEXT: its first line is line 2), checked within a time limit (a cycle
# that hangs the check fails here).
plant_files() {
  local what="$1" expected="$2" needle="$3"
  shift 3
  make_clean_tree "${tree}"
  while [[ $# -ge 2 ]]; do
    mkdir -p "$(dirname "${tree}/$1")"
    printf '// planted\n%s\n' "$2" >"${tree}/$1"
    shift 2
  done
  local rc=0
  timeout 30 bash "${check}" "${tree}" >/dev/null 2>&1 || rc=$?
  if [[ ${rc} -eq 124 ]]; then
    fail "${what}: the check did not end within 30 s"
    return
  fi
  expect_result "${tree}" "${expected}" "${what}" "${needle}"
}

plant_files "program -> program header -> runtime" 1 \
  "src/program/a.cc:2: layering violation (src/program must not depend on runtime or execution): reaches src/runtime/engine.h via program/helper.h -> runtime/engine.h" \
  src/program/a.cc '#include "program/helper.h"' \
  src/program/helper.h '#include "runtime/engine.h"' \
  src/runtime/engine.h '#pragma once'
plant_files "program -> public header (angle) -> execution (relative path)" 1 \
  "src/program/b.cc:2: layering violation (src/program must not depend on runtime or execution): reaches src/execution/executor.h via rayorch/detail/config.h -> ../../../src/execution/executor.h" \
  src/program/b.cc '#include <rayorch/detail/config.h>' \
  include/rayorch/detail/config.h '#include "../../../src/execution/executor.h"' \
  src/execution/executor.h '#pragma once'
plant_files "backend -> own header -> interface -> driver state" 1 \
  "src/execution/backends/g.cc:2: layering violation (a backend runs invocations and holds no driver logic): reaches src/execution/run_state.h via backends.h -> execution/worker_pool.h -> execution/run_state.h" \
  src/execution/backends/g.cc '#include "backends.h"' \
  src/execution/backends/backends.h '#include "execution/worker_pool.h"' \
  src/execution/worker_pool.h '#include "execution/run_state.h"' \
  src/execution/run_state.h '#pragma once'
plant_files "backend -> driver state by a relative spelling (resolved)" 1 \
  'src/execution/backends/h.cc:2: layering violation (a backend runs invocations and holds no driver logic): #include "../run_state.h"' \
  src/execution/backends/h.cc '#include "../run_state.h"' \
  src/execution/run_state.h '#pragma once'
plant_files "extension -> allowed interfaces -> engine" 1 \
  "python/src/h.cc:2: layering violation (the Python extension must not reach the engine or the driver's state): reaches src/runtime/engine.h via execution/worker_pool.h -> execution/invoke.h -> runtime/engine.h" \
  python/src/h.cc '#include "execution/worker_pool.h"' \
  src/execution/worker_pool.h '#include "execution/invoke.h"' \
  src/execution/invoke.h '#include <runtime/engine.h>' \
  src/runtime/engine.h '#pragma once'
plant_files "extension -> own header -> cores.h -> pool_sizing.h -> the run's scheduler" 1 \
  "python/src/i.cc:2: layering violation (the Python extension must not reach the engine or the driver's state): reaches src/execution/run/scheduler.h via ray_pools.h -> execution/cores.h -> execution/run/pool_sizing.h -> execution/run/scheduler.h" \
  python/src/i.cc '#include "ray_pools.h"' \
  python/src/ray_pools.h '#include "execution/cores.h"' \
  src/execution/cores.h '#include "execution/run/pool_sizing.h"' \
  src/execution/run/pool_sizing.h '#include "execution/run/scheduler.h"' \
  src/execution/run/scheduler.h '#pragma once'
plant_files "extension -> src/api (src/ spelling) through its own header" 1 \
  "python/src/j.cc:2: layering violation (the Python extension must not reach the engine or the driver's state): reaches src/api/names.h via run_types.h -> src/api/names.h" \
  python/src/j.cc '#include "run_types.h"' \
  python/src/run_types.h '#include "src/api/names.h"' \
  src/api/names.h '#pragma once'
plant_files "extension -> own header -> engine by a \"../\" spelling (stripped, as a direct one)" 1 \
  "python/src/o.cc:2: layering violation (the Python extension must not reach the engine or the driver's state): reaches src/runtime/engine.h via ray_c.h -> ../runtime/engine.h" \
  python/src/o.cc '#include "ray_c.h"' \
  python/src/ray_c.h '#include "../runtime/engine.h"' \
  src/runtime/engine.h '#pragma once'
plant_files "public header -> detail header -> program" 1 \
  "include/rayorch/ok.h:2: layering violation (public headers must not include internal program/runtime/execution headers): reaches src/program/graph.h via rayorch/detail/impl.h -> program/graph.h" \
  include/rayorch/ok.h '#include "rayorch/detail/impl.h"' \
  include/rayorch/detail/impl.h '#include "program/graph.h"'
plant_files "runtime -> plain plan -> the plan's typed code" 1 \
  "src/runtime/s.cc:2: layering violation (src/runtime must not include what can dereference a payload): reaches src/program/plan_code.h via program/plan.h -> program/plan_code.h" \
  src/runtime/s.cc '#include "program/plan.h"' \
  src/program/plan.h '#include "program/plan_code.h"' \
  src/program/plan_code.h '#pragma once'
plant_files "synthetic -> public header -> another workload (workloads/ searched)" 1 \
  "workloads/synthetic/documents.h:2: layering violation (workloads/synthetic is shared by bench and the Python extension): reaches workloads/common/files.h via rayorch/detail/config.h -> common/files.h" \
  workloads/synthetic/documents.h '#include <rayorch/detail/config.h>' \
  include/rayorch/detail/config.h '#include "common/files.h"' \
  workloads/common/files.h '#pragma once'
plant_files "a cycle of includes (and a self-include) ends" 0 "" \
  src/program/c.cc '#include "program/x.h"' \
  src/program/x.h $'#include "program/y.h"\n#include "x.h"' \
  src/program/y.h '#include "program/x.h"'
plant_files "a cycle of includes, then the driver state" 1 \
  "python/src/m.cc:2: layering violation (the Python extension must not reach the engine or the driver's state): reaches src/execution/run_state.h via ray_a.h -> ray_b.h -> execution/run_state.h" \
  python/src/m.cc '#include "ray_a.h"' \
  python/src/ray_a.h '#include "ray_b.h"' \
  python/src/ray_b.h $'#include "ray_a.h"\n#include "execution/run_state.h"' \
  src/execution/run_state.h '#pragma once'
# Chains that reach only allowed headers: the extension through execution/cores.h (its
# pool_sizing.h included), a backend through the interfaces and the protocol, src/program
# through the plain plan and public headers; <execution> is the standard header, not a file.
plant_files "chains to allowed headers only pass" 0 "" \
  python/src/n.cc $'#include "execution/cores.h"\n#include "ray_pools.h"' \
  python/src/ray_pools.h $'#include "execution/worker_pool.h"\n#include "execution/block_store.h"' \
  src/execution/cores.h $'#include "rayorch/executor.h"\n#include "execution/run/pool_sizing.h"\n#include "execution/worker_pool.h"\n#include "execution/worker_server.h"' \
  src/execution/run/pool_sizing.h '#include <rayorch/module_options.h>' \
  include/rayorch/module_options.h '#include <string>' \
  include/rayorch/executor.h '#include "rayorch/outcome.h"' \
  src/execution/worker_pool.h $'#include "execution/invoke.h"\n#include "runtime/protocol.h"' \
  src/execution/worker_server.h '#include "program/plan.h"' \
  src/execution/invoke.h $'#include "runtime/protocol_codec.h"\n#include "program/plan_code.h"' \
  src/runtime/protocol_codec.h '#include "runtime/protocol.h"' \
  src/runtime/protocol.h '#include <rayorch/detail/config.h>' \
  src/program/plan.h '#include <rayorch/outcome.h>' \
  src/program/plan_code.h '#include "program/plan.h"' \
  src/program/n.cc $'#include "program/plan.h"\n#include <vector>' \
  src/runtime/n.cc $'#include <execution>\n#include "runtime/protocol.h"'

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
