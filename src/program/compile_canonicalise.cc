// Compiler phase: canonicalise (DESIGN 4): collapse chains of broadcasts; the collapse is
// skipped when CompileOptions::optimize is false.
#include <fmt/format.h>

#include "program/compiler.h"

namespace rayorch::detail {

// Each broadcast reads the first non-broadcast ancestor of its declared source.
Canonicalisation canonicalise(const Graph::Impl& g, const CompileOptions& options) {
  Canonicalisation out;
  out.optimized = options.optimize;
  out.rewrites.assign(g.ports.size(), {});
  for (const LogicalBroadcast& b : g.broadcasts) {
    int s = b.source;
    if (out.optimized) {
      while (g.ports[s].kind == PortKind::broadcast) s = g.broadcasts[g.ports[s].op].source;
      if (s != b.source) {
        out.rewrites[b.output].push_back(
            fmt::format("rewrite collapse-broadcast-chain: [p{}] -> [p{}]", b.source, s));
      }
    }
    out.broadcast_source.push_back(s);
  }
  return out;
}

}  // namespace rayorch::detail
