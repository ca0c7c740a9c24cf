// Which Calls feed which: computed once per plan, read by the scheduler (backpressure holds
// a Call back by its consumers' backlog; batch_wait waits while a Call's upstream is open).
#include "program/plan.h"

namespace rayorch::detail {

namespace {

// The Calls reading the outputs of `call`, following values through filters, broadcasts and
// expands; a reduce or a Call ends the path (the next Call downstream holds back its own
// producer).
std::vector<int> direct_consumers(const RuntimePlan& plan, int call) {
  std::vector<int> out;
  std::vector<int> ports(plan.calls[call].outputs.begin(), plan.calls[call].outputs.end());
  while (!ports.empty()) {
    const int port = ports.back();
    ports.pop_back();
    for (const Consumer& k : plan.ports[port].consumers) {
      switch (k.kind) {
        case ConsumerKind::call_input:
          if (k.op != call) out.push_back(k.op);
          break;
        case ConsumerKind::expand_list:
          ports.push_back(plan.expands[k.op].children[k.slot]);
          break;
        case ConsumerKind::filter_source:
          ports.push_back(plan.filters[k.op].output);
          break;
        case ConsumerKind::broadcast_source:
          ports.push_back(plan.broadcasts[k.op].output);
          break;
        default:
          break;
      }
    }
  }
  return out;
}

}  // namespace

CallConsumers compute_call_consumers(const RuntimePlan& plan) {
  const std::size_t calls = plan.calls.size();
  CallConsumers c;
  c.direct.resize(calls);
  for (std::size_t k = 0; k < calls; ++k) c.direct[k] = direct_consumers(plan, static_cast<int>(k));
  c.upstream.resize(calls);
  for (std::size_t k = 0; k < calls; ++k) {
    // Close over the direct consumers: `k` is upstream of every Call it reaches.
    std::vector<int> stack(c.direct[k].begin(), c.direct[k].end());
    std::vector<char> seen(calls, 0);
    while (!stack.empty()) {
      const int d = stack.back();
      stack.pop_back();
      if (seen[d]) continue;
      seen[d] = 1;
      c.upstream[d].push_back(static_cast<int>(k));
      stack.insert(stack.end(), c.direct[d].begin(), c.direct[d].end());
    }
  }
  return c;
}

}  // namespace rayorch::detail
