// What a run's results depend on, as one number. See plan_fingerprint.h.
#include "program/plan_fingerprint.h"

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "rayorch/detail/journal.h"

namespace rayorch::detail {

std::uint64_t plan_fingerprint(const RuntimePlan& plan) {
  std::string text;
  auto add = [&](std::string_view s) { text += fmt::format("{}:{};", s.size(), s); };
  for (const PlanPort& p : plan.ports) add(p.type);
  for (const PlanCall& c : plan.calls) {
    add(c.name);
    add(c.udf);
    for (const std::string& a : c.static_args) add(a);
    for (int i : c.inputs) add(std::to_string(i));
    add("->");
    for (int o : c.outputs) add(std::to_string(o));
  }
  add("sources");
  for (int s : plan.sources) add(std::to_string(s));
  add("outputs");
  for (int o : plan.outputs) add(std::to_string(o));
  return fnv1a64(text);
}

}  // namespace rayorch::detail
