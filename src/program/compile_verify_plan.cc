// Compiler phase: verify the lowered plan's internal consistency; a failure is a compiler bug.
#include <string>

#include <fmt/format.h>

#include "rayorch/errors.h"

#include "program/compiler.h"

namespace rayorch::detail {

void verify_plan(const RuntimePlan& plan) {
  auto bug = [](const std::string& what) {
    throw CompileError("internal error while lowering the pipeline: " + what);
  };
  for (std::size_t p = 0; p < plan.ports.size(); ++p) {
    const PlanPort& pp = plan.ports[p];
    if (pp.domain < 0 || pp.domain >= static_cast<int>(plan.domains.size())) {
      bug(fmt::format("p{} has no Domain", p));
    }
    for (const Consumer& c : pp.consumers) {
      switch (c.kind) {
        case ConsumerKind::call_input:
          if (plan.calls[c.op].domain != pp.domain)
            bug(fmt::format("p{} feeds a Call across Domains", p));
          break;
        case ConsumerKind::broadcast_source:
          if (!plan.is_ancestor_or_self(pp.domain, plan.broadcasts[c.op].target_domain)) {
            bug(fmt::format("p{} broadcast to a non-descendant", p));
          }
          break;
        default:
          break;
      }
    }
  }
  for (const PlanExpand& e : plan.expands) {
    if (plan.domains[e.child_domain].parent != e.parent_domain) bug("expand Domains inconsistent");
  }
  for (const PlanReduce& r : plan.reduces) {
    if (plan.domains[r.child_domain].parent != r.parent_domain) bug("reduce Domains inconsistent");
  }
}

}  // namespace rayorch::detail
