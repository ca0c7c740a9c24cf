// Compiler phase: analyse the canonical program: which producers report a mask's boolean,
// and which Calls guard each reduce (DESIGN 4, 5).
#include <algorithm>
#include <vector>

#include "program/compiler.h"

namespace rayorch::detail {

namespace {

// A mask's boolean travels with the reports (DESIGN 6.2), so the producer of every value
// that reaches a mask (through filters and broadcasts, which pass values on unchanged)
// must report it. A Port is created after its inputs, so one pass from the last Port down
// reaches every producer.
std::vector<bool> find_truth_producers(const Graph::Impl& g, const Canonicalisation& canonical) {
  std::vector<bool> needs_truth(g.ports.size(), false);
  for (const LogicalFilter& f : g.filters) needs_truth[f.mask] = true;
  for (std::size_t id = g.ports.size(); id-- > 0;) {
    const LogicalPort& lp = g.ports[id];
    if (!needs_truth[id] || !port_kind_info(lp.kind).forwards_value) continue;
    const int source =
        lp.kind == PortKind::filter ? g.filters[lp.op].source : canonical.broadcast_source[lp.op];
    needs_truth[source] = true;
  }
  return needs_truth;
}

// The Calls of a reduce's child Domain that its values or membership depend on: walk up
// through Calls, filters and broadcasts while staying in that Domain.
std::vector<int> find_reduce_guards(const Graph::Impl& g, const DomainAssignment& domains,
                                    const Canonicalisation& canonical, const LogicalReduce& r) {
  const int child_domain = domains.port_domain[r.values[0]];
  std::vector<int> guards;
  std::vector<int> ports(r.values.begin(), r.values.end());
  ports.push_back(r.members >= 0 ? r.members : r.values[0]);
  std::vector<char> seen(g.ports.size(), 0);
  while (!ports.empty()) {
    const int p = ports.back();
    ports.pop_back();
    if (seen[p] || domains.port_domain[p] != child_domain) continue;
    seen[p] = 1;
    const LogicalPort& lp = g.ports[p];
    if (port_kind_info(lp.kind).worker_output) {
      const std::vector<int>& inputs = g.calls[lp.op].record.inputs;
      if (std::find(guards.begin(), guards.end(), lp.op) == guards.end()) guards.push_back(lp.op);
      ports.insert(ports.end(), inputs.begin(), inputs.end());
    } else if (lp.kind == PortKind::filter) {
      ports.push_back(g.filters[lp.op].source);
      ports.push_back(g.filters[lp.op].mask);
    } else if (lp.kind == PortKind::broadcast) {
      ports.push_back(canonical.broadcast_source[lp.op]);
    }
  }
  std::sort(guards.begin(), guards.end());
  return guards;
}

}  // namespace

Analysis analyse(const Graph::Impl& g, const DomainAssignment& domains,
                 const Canonicalisation& canonical) {
  Analysis out;
  out.needs_truth = find_truth_producers(g, canonical);
  for (const LogicalReduce& r : g.reduces) {
    out.reduce_guards.push_back(find_reduce_guards(g, domains, canonical, r));
  }
  return out;
}

}  // namespace rayorch::detail
