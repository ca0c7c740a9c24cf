// Which READY work an idle slot gets. See scheduler.h.
#include "execution/run/scheduler.h"

#include <algorithm>

#include "execution/run/input_batches.h"

namespace rayorch::detail {

Scheduler::Scheduler(std::shared_ptr<const RuntimePlan> plan, const RunOptions& options)
    : plan_(std::move(plan)),
      backpressure_(options.backpressure != 0),
      rr_(plan_->pools.size(), 0),
      readers_(plan_->pools.size()),
      backlog_limit_(plan_->calls.size(), 0),
      hold_since_(plan_->calls.size(), Clock::time_point::max()) {
  for (std::size_t c = 0; c < plan_->calls.size(); ++c) {
    const PlanCall& pc = plan_->calls[c];
    backlog_limit_[c] = options.backpressure * static_cast<std::size_t>(pc.batch_size) *
                        static_cast<std::size_t>(pool_slots(plan_->pools[pc.pool].options));
    if (plan_->pools[pc.pool].members < 2) continue;
    for (int port : pc.inputs) {
      const PlanPort& in = plan_->ports[port];
      if (in.kind == PortKind::call_output && plan_->calls[in.op].pool == pc.pool) {
        readers_[pc.pool].push_back(static_cast<int>(c));
        break;
      }
    }
  }
}

bool Scheduler::held_back(int call, std::span<const std::unique_ptr<Engine>> active) const {
  if (!backpressure_) return false;
  for (int consumer : plan_->call_consumers.direct[call]) {
    if (ready_grains(active, consumer) >= backlog_limit_[consumer]) return true;
  }
  return false;
}

bool Scheduler::wait_for_batch(const Engine& e, int call, Clock::time_point now) {
  const PlanCall& pc = plan_->calls[call];
  const auto wait = plan_->pools[pc.pool].options.batch_wait;
  if (wait.count() <= 0 || e.ready_count(call) >= static_cast<std::size_t>(pc.batch_size))
    return false;
  if (!e.upstream_unsealed(call)) return false;
  if (hold_since_[call] == Clock::time_point::max()) hold_since_[call] = now;
  return now - hold_since_[call] < wait;
}

Scheduler::Clock::time_point Scheduler::next_hold_deadline() const {
  auto t = Clock::time_point::max();
  for (std::size_t c = 0; c < hold_since_.size(); ++c) {
    if (hold_since_[c] == Clock::time_point::max()) continue;
    t = std::min(t, hold_since_[c] + plan_->pools[plan_->calls[c].pool].options.batch_wait);
  }
  return t;
}

std::optional<Invocation> Scheduler::pick(int pool, bool may_wait,
                                          std::span<const std::unique_ptr<Engine>> active,
                                          std::size_t max_ready) {
  const auto& calls = plan_->pools[pool].calls;
  const std::size_t n = calls.size();
  const auto now = Clock::now();
  auto reserve = [&](Engine& engine, int call) -> std::optional<Invocation> {
    if (!engine.has_work(call)) return std::nullopt;
    // A re-execution is never held back: the consumers' READY work may be waiting for it.
    if (held_back(call, active) && !engine.has_reexecution(call)) return std::nullopt;
    if (may_wait && wait_for_batch(engine, call, now)) return std::nullopt;
    auto rpc = engine.reserve(call, max_ready);
    if (rpc) hold_since_[call] = Clock::time_point::max();
    return rpc;
  };
  // A co-located pool serves the Calls that read its own members' outputs first (DESIGN
  // 5.12): such a value is read while the actor that keeps it is still idle, not after that
  // actor took new work and the reader went to another actor (which then has it exported).
  if (!readers_[pool].empty()) {
    for (const auto& engine : active) {
      for (int call : readers_[pool]) {
        if (auto rpc = reserve(*engine, call)) return rpc;
      }
    }
  }
  for (const auto& engine : active) {
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t idx = (rr_[pool] + k) % n;
      if (auto rpc = reserve(*engine, calls[idx])) {
        rr_[pool] = idx + 1;
        return rpc;
      }
    }
  }
  return std::nullopt;
}

}  // namespace rayorch::detail
