// The compiler's driver: runs the phases of compiler.h in order over one traced graph.
#include "program/compiler.h"

#include <memory>
#include <utility>

#include <fmt/format.h>

namespace rayorch::detail {

std::string call_name(const Graph::Impl& g, int call) {
  return fmt::format("{}#{}", g.modules[g.calls[call].module].record.udf_name, call);
}

std::shared_ptr<const RuntimePlan> compile_graph(Graph& graph, const CompileOptions& options) {
  const Graph::Impl& program = graph.impl();
  const DomainAssignment domains = verify(graph);
  const Canonicalisation canonical = canonicalise(program, options);
  const Analysis analysis = analyse(program, domains, canonical);
  // The plan stays a mutable local until it is shared, so a phase that derives further
  // indexes from the lowered plan is one more line here.
  RuntimePlan plan = lower(program, domains, canonical, analysis, colocate(program, options));
  verify_plan(plan);
  plan.call_consumers = compute_call_consumers(plan);
  return std::make_shared<const RuntimePlan>(std::move(plan));
}

}  // namespace rayorch::detail
