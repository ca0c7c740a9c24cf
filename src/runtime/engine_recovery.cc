// Recovery: a UDF failure under the Call's RecoveryPolicy, a lost actor within the
// infrastructure budget, and requeueing at a higher generation (DESIGN 5).
#include <fmt/format.h>

#include "runtime/engine.h"

namespace rayorch::detail {

std::string Engine::describe_grains(int call, const std::vector<std::uint32_t>& grains) const {
  std::string s;
  for (std::uint32_t e : grains) {
    s += fmt::format("{}{} g{}", s.empty() ? "" : ", ", entity_key(p_.calls[call].domain, e),
                     grains_[call][e].generation);
  }
  return s;
}

void Engine::requeue(int call, const std::vector<std::uint32_t>& grains, std::uint16_t retries_used,
                     bool tail_used, bool immediate) {
  for (std::uint32_t e : grains) {
    move_grain(call, e, GrainEvent::requeue);
    ++grains_[call][e].generation;
  }
  counters_[call].requeues += grains.size();
  RecoveryBatch b{grains, retries_used, tail_used};
  if (immediate)
    queues_[call].immediate.push_back(std::move(b));
  else
    queues_[call].deferred.push_back(std::move(b));
}

std::optional<Engine::InFlight> Engine::take_in_flight(std::uint64_t rpc_id) {
  auto it = in_flight_.find(rpc_id);
  if (it == in_flight_.end()) {
    ++stale_reports_;  // a report for an attempt already replayed or abandoned
    return std::nullopt;
  }
  InFlight in_flight = std::move(it->second);
  in_flight_.erase(it);
  return in_flight;
}

FailureVerdict Engine::fail(std::uint64_t rpc_id, const std::string& error) {
  std::optional<InFlight> taken = take_in_flight(rpc_id);
  if (!taken) return {};
  InFlight& in_flight = *taken;
  const int call = in_flight.call;
  if (in_flight.lineage >= 0) {
    rebuild_failed(std::move(in_flight), "re-executing it failed: " + error, false);
    return {};
  }
  // Barriered Grains are sealed before the policy is consulted.
  auto live = take_live(call, in_flight.grains, &in_flight.generations);
  if (live.empty()) return {};
  return recover(in_flight, live, error);
}

FailureVerdict Engine::recover(const InFlight& in_flight, const std::vector<std::uint32_t>& live,
                               const std::string& error) {
  const int call = in_flight.call;
  const PlanCall& pc = p_.calls[call];
  const RecoveryPolicy& policy = pc.recovery;
  auto abort_with = [&](const std::string& why) {
    // Keep the grains IN_FLIGHT: the run stops here.
    return FailureVerdict{
        true, fmt::format("Call {} (UDF {}) failed on Grains [{}]{}: {}; {}", pc.name, pc.udf,
                          describe_grains(call, live), why, error,
                          policy.kind() == RecoveryPolicy::Kind::abort
                              ? "the Module's recovery policy abort() (the default) stops the run "
                                "here: to contain such failures give the Module "
                                ".recovery(ro::RecoveryPolicy::retry_batch(n)), retry_tail(n) or "
                                "isolate_tail() (which marks a Grain that always fails FAILED and "
                                "lets the run go on)"
                              : "its retries are used up: isolate_tail() would mark a Grain that "
                                "always fails FAILED and let the run go on")};
  };
  switch (policy.kind()) {
    case RecoveryPolicy::Kind::abort:
      return abort_with("");
    case RecoveryPolicy::Kind::retry_batch:
    case RecoveryPolicy::Kind::retry_tail:
      if (in_flight.retries_used >= policy.retries()) {
        return abort_with(fmt::format(" after {} retries", in_flight.retries_used));
      }
      requeue(call, live, static_cast<std::uint16_t>(in_flight.retries_used + 1), false,
              policy.kind() == RecoveryPolicy::Kind::retry_batch);
      return {};
    case RecoveryPolicy::Kind::isolate_tail:
      if (!in_flight.tail_used) {
        requeue(call, live, in_flight.retries_used, true, false);
      } else if (in_flight.grains.size() > 1) {
        // Only an RPC of one Grain proves that Grain poisoned: when the barrier sealed the
        // others, the failure may have been theirs, so a lone survivor is retried alone.
        const std::size_t half = live.size() / 2;
        std::vector<std::uint32_t> a(live.begin(),
                                     live.begin() + static_cast<std::ptrdiff_t>(half));
        std::vector<std::uint32_t> b(live.begin() + static_cast<std::ptrdiff_t>(half), live.end());
        if (!a.empty()) requeue(call, a, in_flight.retries_used, true, false);
        requeue(call, b, in_flight.retries_used, true, false);
      } else {
        seal_grain(call, live[0], ItemState::failed, intern(error, call, live[0]),
                   GrainEvent::suppress);
      }
      return {};
  }
  return abort_with("");
}

FailureVerdict Engine::lost(std::uint64_t rpc_id, const std::string& reason, Loss loss) {
  std::optional<InFlight> taken = take_in_flight(rpc_id);
  if (!taken) return {};
  InFlight& in_flight = *taken;
  const int call = in_flight.call;
  const PlanCall& pc = p_.calls[call];
  if (in_flight.lineage >= 0) {
    rebuild_failed(std::move(in_flight), "re-executing it lost its actor: " + reason, true);
    return {};
  }
  auto live = take_live(call, in_flight.grains, &in_flight.generations);
  if (live.empty()) return {};
  bool exhausted = false;
  for (std::uint32_t e : live) exhausted |= grains_[call][e].infra_used >= pc.infra_retries;
  if (exhausted && p_.pools[pc.pool].options.isolation == Isolation::process) {
    // A process-isolated pool contains the loss to one worker, so a Grain that keeps
    // killing workers is split out of its RPC (as isolate_tail does, halves to the
    // deferred queue) until it alone is FAILED with the loss as its cause; the run goes on.
    if (live.size() > 1) {
      const std::size_t half = live.size() / 2;
      std::vector<std::uint32_t> a(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(half));
      std::vector<std::uint32_t> b(live.begin() + static_cast<std::ptrdiff_t>(half), live.end());
      requeue(call, a, in_flight.retries_used, in_flight.tail_used, false);
      requeue(call, b, in_flight.retries_used, in_flight.tail_used, false);
    } else {
      seal_grain(call, live[0], ItemState::failed, intern(reason, call, live[0]),
                 GrainEvent::suppress);
    }
    return {};
  }
  if (exhausted && loss == Loss::timeout) {
    // A hung thread (or Ray actor) was abandoned and replaced, so the pool lost nothing; the
    // hang is the UDF's on these inputs, and the Call's RecoveryPolicy decides: isolate_tail()
    // splits the RPC's Grains until the Grain that keeps timing out is FAILED alone.
    return recover(in_flight, live, reason);
  }
  for (std::uint32_t e : live) {
    if (grains_[call][e].infra_used >= pc.infra_retries) {
      return FailureVerdict{
          true,
          fmt::format("Call {} (UDF {}) lost its actor on Grains [{}] and the "
                      "infrastructure budget ({} replays per Grain) is exhausted: {}",
                      pc.name, pc.udf, describe_grains(call, live), pc.infra_retries, reason)};
    }
  }
  for (std::uint32_t e : live) ++grains_[call][e].infra_used;
  requeue(call, live, in_flight.retries_used, in_flight.tail_used, true);
  return {};
}

}  // namespace rayorch::detail
