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
#   execution/worker_server.h  how a local worker server is launched (the process workers)
#   execution/block_store.h    the BlockStore interface the Ray backend's object-store store
#                              implements (the driver stores and resolves blocks through it)
#   execution/actor_block_cache.h  the driver's record of which blocks each remote actor holds;
#                              backend-neutral bookkeeping the Ray pools use to send a block once
#   execution/cores.h          the driver's options (DriverOptions) and the factories that make
#                              an ExecutionCore (the one driver) over any WorkerPools (the Ray
#                              backend's pools are attached to it there), without the driver's
#                              class or its state
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
# What a file reaches, not only what it includes. A check of the #include lines alone misses
# what an allowed header drags in: python/src/core.cc once included execution/driver.h, then
# allowed, which includes execution/run_state.h, which includes runtime/engine.h: the
# extension compiled the engine and the direct check passed. So every rule above also applies to the set of project
# headers a file reaches through includes, transitively: an include resolves to a file of the
# tree (searched, like the compiler does, in the including file's directory, then src/,
# include/, the root (workloads/..., bench/...), python/src/, workloads/, bench/, tests/; a
# leading "src/" or "../" is handled), one that resolves to none (a system or third-party
# header) is ignored, and a cycle of includes ends the walk. The first hop of a reported chain
# is allowed (an offending first hop is a direct violation), the headers along the chain too:
# the chain stops at the nearest offending header. For python/src the direct allowlist above
# is joined by a reach rule: the extension must not reach the engine or the driver's state,
# i.e. runtime/... other than runtime/protocol.h and runtime/protocol_codec.h,
# execution/run_state.h, execution/run/..., execution/driver.h, execution/observers/...,
# program/compiler.h, program/logical.h or src/api/..., with one exception:
# execution/run/pool_sizing.h, a plain options/policy header (the sizing options inside
# DriverOptions, from the public module options only), which execution/cores.h includes.
#
# Both #include "x/..." and #include <x/...> are checked; a leading "src/" or
# "../" components are also recognised. A direct violation prints
#   FILE:LINE: layering violation (RULE): #include ...
# and a reached one prints the first offending chain, from the include at FILE:LINE:
#   FILE:LINE: layering violation (RULE): reaches HEADER via A -> B -> C
# (A, B, C as spelled in the including files; HEADER the reached file under SOURCE_ROOT).
# One pass: one find and one grep build the include graph, and awk resolves it and walks it
# backwards from each rule's offending headers once (a breadth-first search, so each chain
# reported is a shortest one).
#
# usage: check.sh SOURCE_ROOT      exit 0 = clean, 1 = violations, 2 = usage or error
set -euo pipefail

if [[ $# -ne 1 || ! -d "$1" ]]; then
  echo "usage: $0 SOURCE_ROOT" >&2
  exit 2
fi
root="$(cd "$1" && pwd)"

# The directories whose files form the include graph (what an include can resolve to).
dirs=()
for d in src include python/src workloads bench tests; do
  [[ -d "${root}/${d}" ]] && dirs+=("${d}")
done

# The rules, one a line, tab-separated: MODE TARGET FORBIDDEN ALLOWED TEXT.
#   MODE       direct: the file's own includes only; reach: what it reaches only; both.
#   TARGET     a directory (every file under it) or one file, relative to SOURCE_ROOT.
#   FORBIDDEN  an extended regex on a header's name: an include as spelled, less its
#              leading "../" components and "src/", or a reached file's path less its leading
#              src/, include/ or workloads/ (so src/runtime/engine.h is runtime/engine.h,
#              include/rayorch/x.h is rayorch/x.h, workloads/common/x.h is common/x.h, and
#              bench/x.h or python/src/x.h stay as they are).
#   ALLOWED    the exceptions among FORBIDDEN (an extended regex, or - for none).
tab=$'\t'
rules="$(cat <<EOF
both${tab}src/api${tab}^(program|runtime|execution)/${tab}-${tab}src/api defines the public headers from public headers only
both${tab}src/program${tab}^(runtime|execution)/${tab}-${tab}src/program must not depend on runtime or execution
both${tab}src/runtime${tab}^execution/${tab}-${tab}src/runtime must not depend on execution
both${tab}include/rayorch${tab}^(program|runtime|execution)/${tab}-${tab}public headers must not include internal program/runtime/execution headers
both${tab}workloads/synthetic${tab}^(program|runtime|execution|bench|python|common|pdf2md|video)/${tab}-${tab}workloads/synthetic is shared by bench and the Python extension
both${tab}src/runtime${tab}^(rayorch/detail/erased\.h|rayorch/detail/udf_traits\.h|rayorch/column\.h|rayorch/detail/graph\.h|rayorch/rayorch\.h|rayorch/executor\.h|rayorch/module\.h|rayorch/ops\.h|rayorch/program\.h|program/plan_code\.h|program/logical\.h)\$${tab}-${tab}src/runtime must not include what can dereference a payload
both${tab}src/program/plan.h${tab}^(rayorch/detail/erased\.h|rayorch/detail/graph\.h|program/logical\.h)\$${tab}-${tab}the runtime plan must stay plain data
both${tab}src/execution/backends${tab}^(runtime/.*|execution/driver\.h|execution/run_state\.h|execution/run/.*|execution/observers/.*)\$${tab}^runtime/protocol(_codec)?\.h\$${tab}a backend runs invocations and holds no driver logic
direct${tab}python/src${tab}^(api|program|runtime|execution)/${tab}^(execution/worker_pool\.h|execution/worker_server\.h|execution/block_store\.h|execution/actor_block_cache\.h|execution/cores\.h|execution/invoke\.h|runtime/protocol\.h|runtime/protocol_codec\.h|program/plan\.h|program/plan_code\.h)\$${tab}the Python extension uses the public headers and the execution interfaces only
reach${tab}python/src${tab}^(api/.*|runtime/.*|execution/run_state\.h|execution/run/.*|execution/driver\.h|execution/observers/.*|program/compiler\.h|program/logical\.h)\$${tab}^(runtime/protocol\.h|runtime/protocol_codec\.h|execution/run/pool_sizing\.h)\$${tab}the Python extension must not reach the engine or the driver's state
EOF
)"

# The awk program reads three sections: @rules, @files (every source file of the graph),
# @includes (grep's FILE:LINE:TEXT of every #include line).
# shellcheck disable=SC2016  # awk's $ fields, not the shell's
program='
function dirname(p) { return match(p, /\/[^\/]*$/) ? substr(p, 1, RSTART - 1) : "" }
# norm(P): P with "." and ".." components folded; "" if it climbs out of the root.
function norm(p,   n, parts, i, k, stack, out) {
  n = split(p, parts, "/"); k = 0
  for (i = 1; i <= n; i++) {
    if (parts[i] == "" || parts[i] == ".") continue
    if (parts[i] == "..") { if (k == 0) return ""; k--; continue }
    stack[++k] = parts[i]
  }
  out = stack[1]
  for (i = 2; i <= k; i++) out = out "/" stack[i]
  return out
}
# strip(S): an include as spelled, less its leading "../" components and "src/".
function strip(s) {
  while (substr(s, 1, 3) == "../") s = substr(s, 4)
  if (substr(s, 1, 4) == "src/") s = substr(s, 5)
  return s
}
# canon(P): the name the rules see for the file P of the tree.
function canon(p) {
  if (substr(p, 1, 4) == "src/") return substr(p, 5)
  if (substr(p, 1, 8) == "include/") return substr(p, 9)
  if (substr(p, 1, 10) == "workloads/") return substr(p, 11)
  return p
}
function lookup(d, s,   c, i) {
  c = norm(d == "" ? s : d "/" s)
  if (c != "" && (c in exists)) return c
  for (i = 1; i <= nsearch; i++) {
    c = norm(search[i] s)
    if (c != "" && (c in exists)) return c
  }
  return ""
}
# resolve(FILE, S): the file of the tree that FILE`s include of S names, or "".
function resolve(f, s,   d, key, r) {
  d = dirname(f); key = d SUBSEP s
  if (key in resolved) return resolved[key]
  r = lookup(d, s)
  if (r == "" && strip(s) != s) r = lookup(d, strip(s))
  resolved[key] = r
  return r
}
function in_target(p, t) { return p == t || substr(p, 1, length(t) + 1) == t "/" }
function offends(name, r) { return name ~ forbid[r] && !(allow[r] != "-" && name ~ allow[r]) }
function report(f, ln, r, msg) {
  print f ":" ln ": layering violation (" what[r] "): " msg
  violations++
}
BEGIN {
  nsearch = split("src/ include/ ROOT python/src/ workloads/ bench/ tests/", search, " ")
  for (i = 1; i <= nsearch; i++) if (search[i] == "ROOT") search[i] = ""
}
/^@(rules|files|includes)$/ { section = substr($0, 2); next }
section == "rules" {
  split($0, field, "\t")
  nr++; mode[nr] = field[1]; target[nr] = field[2]; forbid[nr] = field[3]
  allow[nr] = field[4]; what[nr] = field[5]
  next
}
section == "files" { nf++; file[nf] = $0; exists[$0] = 1; next }
section == "includes" {
  i = index($0, ":"); f = substr($0, 1, i - 1); rest = substr($0, i + 1)
  i = index(rest, ":"); ln = substr(rest, 1, i - 1); text = substr(rest, i + 1)
  if (!(f in exists) || !match(text, /[<"][^>"]*[>"]/)) next
  ne++; from[ne] = f; line[ne] = ln; spelled[ne] = substr(text, RSTART + 1, RLENGTH - 2)
  sub(/^[ \t]+/, "", text); shown[ne] = text
  to[ne] = resolve(f, spelled[ne])
  nout[f]++; out[f, nout[f]] = ne
  if (to[ne] != "") { nin[to[ne]]++; into[to[ne], nin[to[ne]]] = ne }
}
END {
  for (r = 1; r <= nr; r++) {
    # Direct: each include of a forbidden header, as spelled or as resolved.
    if (mode[r] != "reach") {
      for (i = 1; i <= nf; i++) {
        f = file[i]
        if (!in_target(f, target[r])) continue
        for (j = 1; j <= nout[f]; j++) {
          e = out[f, j]
          if (offends(strip(spelled[e]), r) || (to[e] != "" && offends(canon(to[e]), r)))
            report(f, line[e], r, shown[e])
        }
      }
    }
    if (mode[r] == "direct") continue
    # Reach: a breadth-first search backwards from the offending headers gives every file its
    # distance to the nearest one (dist) and the include that leads towards it (next_edge).
    split("", dist); split("", next_edge); head = 1; tail = 0
    for (i = 1; i <= nf; i++)
      if (offends(canon(file[i]), r)) { dist[file[i]] = 0; queue[++tail] = file[i] }
    while (head <= tail) {
      x = queue[head++]
      for (j = 1; j <= nin[x]; j++) {
        e = into[x, j]; y = from[e]
        if (y in dist) continue
        dist[y] = dist[x] + 1; next_edge[y] = e; queue[++tail] = y
      }
    }
    for (i = 1; i <= nf; i++) {
      f = file[i]
      if (!in_target(f, target[r])) continue
      best = 0
      for (j = 1; j <= nout[f]; j++) {
        e = out[f, j]; h = to[e]
        if (h == "" || !(h in dist)) continue
        if (dist[h] == 0 && mode[r] == "both") continue  # a direct violation, reported above
        if (!best || dist[h] < dist[to[best]]) best = e
      }
      if (!best) continue
      chain = spelled[best]; h = to[best]
      while (dist[h] > 0) { e = next_edge[h]; chain = chain " -> " spelled[e]; h = to[e] }
      report(f, line[best], r, "reaches " h " via " chain)
    }
  }
  if (violations > 0) {
    print "layering: " violations " violation(s) found" > "/dev/stderr"
    exit 1
  }
}
'

# The source files: find's and grep's selections must agree.
find_names=(-name '*.h')
grep_includes=(--include='*.h')
for ext in hh hpp hxx inl ipp inc c cc cpp cxx; do
  find_names+=(-o -name "*.${ext}")
  grep_includes+=("--include=*.${ext}")
done

rc=0
(
  cd "${root}"
  echo "@rules"
  printf '%s\n' "${rules}"
  echo "@files"
  if [[ ${#dirs[@]} -gt 0 ]]; then
    find "${dirs[@]}" -type f \( "${find_names[@]}" \) | LC_ALL=C sort
    echo "@includes"
    grep -rnHIE "${grep_includes[@]}" \
      -e '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "${dirs[@]}" || true
  else
    echo "@includes"
  fi
) | awk "${program}" || rc=$?

case ${rc} in
  0) echo "layering: OK" ;;
  1) exit 1 ;;
  *) echo "layering: the check itself failed (exit ${rc})" >&2; exit 2 ;;
esac
