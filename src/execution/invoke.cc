// The worker boundary. See invoke.h.
#include "execution/invoke.h"

#include <fmt/format.h>

#include "rayorch/outcome.h"

#include "execution/run_state.h"

namespace rayorch::detail {

Attempt invoke_call(const PlanCall& call, UdfInstance& instance,
                    const std::vector<std::vector<const void*>>& inputs) {
  Attempt a;
  std::vector<ColumnInput> columns;
  columns.reserve(inputs.size());
  for (const auto& in : inputs) columns.push_back(ColumnInput{in.data(), in.size()});
  a.start = std::chrono::steady_clock::now();
  try {
    a.output = call.invoker(instance, columns);
    a.kind = Attempt::Kind::ok;
  } catch (const ActorLost&) {
    a.kind = Attempt::Kind::lost;
    a.error = describe_current_exception();
  } catch (...) {
    a.kind = Attempt::Kind::failed;
    a.error = describe_current_exception();
  }
  a.end = std::chrono::steady_clock::now();
  return a;
}

std::unique_ptr<UdfInstance> build_instance(const PlanPool& pool, std::string& error) {
  try {
    return pool.factory();
  } catch (...) {
    error = fmt::format("the constructor of Module<{}> threw {}", pool.udf,
                        describe_current_exception());
    return nullptr;
  }
}

}  // namespace rayorch::detail
