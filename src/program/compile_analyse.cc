// Compiler phase: analyse the lowered plan: which producers report a mask's boolean, and
// which Calls guard each reduce (DESIGN 4, 5).
#include <algorithm>
#include <vector>

#include "program/compiler.h"

namespace rayorch::detail {

void Compiler::analyse(RuntimePlan& plan) {
  mark_truth_producers(plan);
  find_reduce_guards(plan);
}

// The Calls of a reduce's child Domain that its values or membership depend on: walk up
// through Calls, filters and broadcasts while staying in that Domain.
void Compiler::find_reduce_guards(RuntimePlan& plan) {
  for (PlanReduce& r : plan.reduces) {
    std::vector<int> ports(r.values.begin(), r.values.end());
    ports.push_back(r.members);
    std::vector<char> seen(plan.ports.size(), 0);
    while (!ports.empty()) {
      const int p = ports.back();
      ports.pop_back();
      if (seen[p] || plan.ports[p].domain != r.child_domain) continue;
      seen[p] = 1;
      const PlanPort& pp = plan.ports[p];
      if (port_kind_info(pp.kind).worker_output) {
        const PlanCall& c = plan.calls[pp.op];
        if (std::find(r.guards.begin(), r.guards.end(), pp.op) == r.guards.end())
          r.guards.push_back(pp.op);
        ports.insert(ports.end(), c.inputs.begin(), c.inputs.end());
      } else if (pp.kind == PortKind::filter) {
        ports.push_back(plan.filters[pp.op].source);
        ports.push_back(plan.filters[pp.op].mask);
      } else if (pp.kind == PortKind::broadcast) {
        ports.push_back(plan.broadcasts[pp.op].source);
      }
    }
    std::sort(r.guards.begin(), r.guards.end());
  }
}

// A mask's boolean travels with the reports (DESIGN 6.2), so the producer of every value
// that reaches a mask (through filters and broadcasts, which pass values on unchanged)
// must report it. A Port is created after its inputs, so one pass from the last Port down
// reaches every producer.
void Compiler::mark_truth_producers(RuntimePlan& plan) {
  for (const PlanFilter& f : plan.filters) plan.ports[f.mask].needs_truth = true;
  for (std::size_t id = plan.ports.size(); id-- > 0;) {
    const PlanPort& pp = plan.ports[id];
    if (!pp.needs_truth || !port_kind_info(pp.kind).forwards_value) continue;
    const int source =
        pp.kind == PortKind::filter ? plan.filters[pp.op].source : plan.broadcasts[pp.op].source;
    plan.ports[source].needs_truth = true;
  }
}

}  // namespace rayorch::detail
