// Compiler phase: canonicalise (DESIGN 4): collapse chains of broadcasts; the collapse is
// skipped when CompileOptions::optimize is false.
#include <fmt/format.h>

#include "program/compiler.h"

namespace rayorch::detail {

// Collapses chains of broadcasts: each broadcast reads the first non-broadcast ancestor.
void Compiler::canonicalise(RuntimePlan& plan) {
  plan.rewrites.assign(g_.ports.size(), {});
  effective_source_.clear();
  for (const LogicalBroadcast& b : g_.broadcasts) {
    int s = b.source;
    if (options_.optimize) {
      while (g_.ports[s].kind == PortKind::broadcast) s = g_.broadcasts[g_.ports[s].op].source;
      if (s != b.source) {
        plan.rewrites[b.output].push_back(
            fmt::format("rewrite collapse-broadcast-chain: [p{}] -> [p{}]", b.source, s));
      }
    }
    effective_source_.push_back(s);
  }
}

}  // namespace rayorch::detail
