// Compiler phase (part of verify): the Modules of one colocate group share one pool (DESIGN
// 5.12), so they must agree on every option of a pool; each disagreement is a CompileError
// naming both Modules, the option and both values.
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rayorch/errors.h"

#include "program/compiler.h"

namespace rayorch::detail {

std::vector<std::pair<const char*, std::string>> pool_option_values(const ModuleOptions& o) {
  return {
      {"replicas", sizes_itself(o) ? "auto" : std::to_string(o.replicas)},
      {"min_replicas", std::to_string(o.min_replicas)},
      {"max_replicas", std::to_string(o.max_replicas)},
      {"cpus", fmt::format("{:g}", o.cpus)},
      {"gpus", fmt::format("{:g}", o.gpus)},
      {"resources", fmt::format("{}", o.resources)},
      {"timeout", fmt::format("{} ms", o.timeout.count())},
      {"batch_wait", fmt::format("{} ms", o.batch_wait.count())},
      {"reservation", o.reservation == Reservation::parent_bound ? "parent_bound" : "elastic"},
      {"isolation", o.isolation == Isolation::process ? "process" : "threads"},
      {"memory_limit", std::to_string(o.memory_limit)},
  };
}

void verify_colocation(const Graph::Impl& g) {
  std::map<std::string, int> first;  // group -> its first Module
  for (std::size_t m = 0; m < g.modules.size(); ++m) {
    const ModuleRecord& record = g.modules[m].record;
    if (record.options.colocate.empty()) continue;
    const auto [it, fresh] = first.emplace(record.options.colocate, static_cast<int>(m));
    if (fresh) continue;
    const ModuleRecord& lead = g.modules[it->second].record;
    const auto ours = pool_option_values(record.options);
    const auto theirs = pool_option_values(lead.options);
    for (std::size_t k = 0; k < ours.size(); ++k) {
      if (ours[k].second == theirs[k].second) continue;
      throw CompileError(fmt::format(
          "Module<{}> and Module<{}> are co-located (colocate=\"{}\") but differ in {} ({} and "
          "{}): co-located Modules share one pool, so they must agree on its options; set {} "
          "equal on both, or drop colocate from one of them",
          lead.udf_name, record.udf_name, record.options.colocate, ours[k].first, theirs[k].second,
          ours[k].second, ours[k].first));
    }
  }
}

}  // namespace rayorch::detail
