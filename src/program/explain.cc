// explain(): one line per Port of a RuntimePlan, its rewrites, and the Calls no output uses
// (DESIGN 4).
#include <string>
#include <vector>

#include <fmt/format.h>

#include "rayorch/program.h"

#include "program/plan.h"

namespace rayorch::detail {

std::string explain_plan(const RuntimePlan& plan) {
  std::string out = fmt::format("RuntimePlan[{}]\n", plan.optimized ? "optimized" : "unoptimized");
  for (std::size_t p = 0; p < plan.ports.size(); ++p) {
    const PlanPort& pp = plan.ports[p];
    std::string inputs;
    for (int in : pp.inputs) inputs += fmt::format("{}p{}", inputs.empty() ? "" : ",", in);
    const PortKindInfo& kind = port_kind_info(pp.kind);
    std::string rule = kind.rule;
    std::string note;
    if (pp.kind == PortKind::call_output) {
      const PlanCall& call = plan.calls[pp.op];
      note = fmt::format(" by {}", call.name);
      if (call.outputs.size() > 1) note += fmt::format("[{}]", pp.slot);
      if (!call.static_args.empty()) {
        std::string args;
        for (const auto& a : call.static_args) args += (args.empty() ? "" : ", ") + a;
        note += fmt::format(" static({})", args);
      }
    } else if (pp.kind == PortKind::broadcast) {
      rule += fmt::format("(p{})", plan.broadcasts[pp.op].source);  // the effective source
    }
    out += fmt::format("  p{} {} d{} <- [{}] => {}{}{}\n", p, kind.name, pp.domain, inputs, rule,
                       note, pp.is_output ? " output" : "");
    for (const std::string& r : plan.rewrites[p]) out += "    " + r + "\n";
  }
  // A co-located pool runs several Modules' Calls on each of its actors (DESIGN 5.12).
  for (const PlanPool& pool : plan.pools) {
    if (pool.members < 2) continue;
    std::string calls;
    for (int c : pool.calls) calls += (calls.empty() ? "" : ", ") + plan.calls[c].name;
    out += fmt::format("  co-located pool {}: {}{}\n", pool.name, calls,
                       pool.found_by_compiler ? " (found by the compiler)" : "");
  }
  // A Call that no output depends on still runs (an input batch completes only when every
  // Grain is sealed, DESIGN 5) and its failures can still abort the run. It is not an error
  // (docs/SEMANTICS.md), but usually a forgotten return value, so the plan says so.
  std::vector<char> live(plan.ports.size(), 0);
  for (int o : plan.outputs) live[o] = 1;
  // Ports are created after their inputs, so one pass from the last Port down suffices.
  for (std::size_t id = plan.ports.size(); id-- > 0;) {
    if (!live[id]) continue;
    for (int in : plan.ports[id].inputs) live[in] = 1;
  }
  for (const PlanCall& c : plan.calls) {
    bool used = false;
    std::string outs;
    for (int o : c.outputs) {
      used = used || live[o];
      outs += fmt::format("{}p{}", outs.empty() ? "" : ",", o);
    }
    if (!used) {
      out += fmt::format(
          "  unused Call {} [{}]: no pipeline output depends on it, yet it runs on every Item "
          "and its failures count; return its output from forward() or remove it\n",
          c.name, outs);
    }
  }
  return out;
}

}  // namespace rayorch::detail
