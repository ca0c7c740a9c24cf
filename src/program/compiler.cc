// The compiler's driver: runs the phases of compiler.h in order over one traced graph.
#include "program/compiler.h"

#include <fmt/format.h>

namespace rayorch::detail {

std::string call_name(const Graph::Impl& g, int call) {
  return fmt::format("{}#{}", g.modules[g.calls[call].module].record.udf_name, call);
}

std::shared_ptr<const RuntimePlan> Compiler::run() {
  auto plan = std::make_shared<RuntimePlan>();
  plan->optimized = options_.optimize;
  verify_and_assign_domains(*plan);
  canonicalise(*plan);
  lower(*plan);
  analyse(*plan);
  verify_plan(*plan);
  plan->call_consumers = compute_call_consumers(*plan);
  return plan;
}

std::shared_ptr<const RuntimePlan> compile_graph(Graph& graph, const CompileOptions& options) {
  return Compiler(graph, options).run();
}

}  // namespace rayorch::detail
