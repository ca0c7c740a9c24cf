// The driver and its actors (DESIGN 6.1.4): the events the pools report and those
// the driver decides, applied to each pool's PoolState; a pool none of whose actors can start;
// the waits for the first ready actors before a run. Actors start while the driver runs;
// everything here runs on the driver's thread. See driver.h.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "rayorch/errors.h"

#include "execution/driver.h"

namespace rayorch::detail {

bool Driver::apply(const ActorEvent& event) {
  const auto p = static_cast<std::size_t>(event.pool);
  if (p >= pool_states_.size()) return false;
  PoolState& pool = pool_states_[p];
  if (!pool.apply(event)) return false;
  if (event.kind == ActorEvent::Kind::ready || event.kind == ActorEvent::Kind::failed) {
    fresh_.push_back(
        FreshStart{.pool = event.pool, .start = pool.starts().started.back(), .at = event.at});
  }
  return true;
}

void Driver::apply_reported() {
  reported_.swap(drained_events_);  // those drain() put aside come first
  drained_events_.clear();
  pools_->take_actor_events(reported_);
  for (const ActorEvent& e : reported_) {
    // An actor lost while idle: no attempt's loss counts its replacement.
    if (apply(e) && e.kind == ActorEvent::Kind::restarting)
      ++restarted_[static_cast<std::size_t>(e.pool)];
  }
  reported_.clear();
  abandon_overdue_starts();
}

void Driver::abandon_overdue_starts() {
  const std::optional<Clock::duration> timeout = pools_->start_timeout();
  if (!timeout) return;
  const auto now = Clock::now();
  for (std::size_t p = 0; p < pool_states_.size(); ++p) {
    const std::vector<int> overdue = pool_states_[p].overdue_starts(now, *timeout);
    if (overdue.empty()) continue;
    const std::string why = pools_->abandon_starts(static_cast<int>(p), overdue);
    for (int actor : overdue) {
      apply({.kind = ActorEvent::Kind::failed,
             .pool = static_cast<int>(p),
             .actor = actor,
             .at = now,
             .error = why});
    }
  }
}

void Driver::fail_dead_pools() {
  for (const PoolState& pool : pool_states_) {
    if (!pool.can_never_run()) continue;
    // No actor of this pool can ever run its Calls: the executor cannot run the program.
    close();
    throw ExecutionError(
        fmt::format("no actor of Module<{}> could start ({} of {} failed); the first error: {}",
                    pool.name(), pool.count(ActorPhase::failed), pool.tried(), pool.first_error()));
  }
}

void Driver::take_actor_events(RunState& state) {
  apply_reported();
  restart_long_held();
  for (const FreshStart& f : fresh_) state.actor_started(f.pool, f.start, f.at);
  fresh_.clear();
  for (std::size_t p = 0; p < restarted_.size(); ++p)
    for (; restarted_[p] > 0; --restarted_[p]) state.count_replaced_actor(static_cast<int>(p));
  node_losses_.clear();
  pools_->take_node_losses(node_losses_);
  for (const NodeLoss& loss : node_losses_) state.node_lost(loss);
  fail_dead_pools();
}

void Driver::await_actors() {
  if (closed_) throw ExecutionError("this executor is closed; create a new executor");
  for (;;) {
    apply_reported();
    unannounced_.insert(unannounced_.end(), fresh_.begin(), fresh_.end());
    fresh_.clear();
    fail_dead_pools();
    // A self-sizing pool with no actor started has nothing to wait for.
    const bool all = std::all_of(pool_states_.begin(), pool_states_.end(), [](const PoolState& p) {
      return p.count(ActorPhase::ready) > 0 ||
             (p.sizes_itself() && p.count(ActorPhase::starting) == 0);
    });
    if (all) return;
    // Only late results of attempts abandoned in earlier runs can come: the next run
    // counts them.
    pools_->wait(Clock::now() + std::chrono::milliseconds(200), late_results_);
  }
}

void Driver::await_source_actor(RunState& state) {
  // A program without Calls has no actor to wait for: its outputs follow from the sources.
  if (source_pools_.empty()) return;
  auto ready_source = [this] {
    return std::any_of(source_pools_.begin(), source_pools_.end(), [this](int p) {
      return pool_states_[static_cast<std::size_t>(p)].count(ActorPhase::ready) > 0;
    });
  };
  while (!state.done() && !ready_source()) {
    results_.clear();
    pools_->wait(Clock::now() + std::chrono::milliseconds(200), results_);
    for (WorkerResult& r : results_) handle(state, r);  // late results of earlier runs only
    take_actor_events(state);
    state.tick();
  }
}

bool Driver::waiting_for_actors() const {
  return std::any_of(pool_states_.begin(), pool_states_.end(), [](const PoolState& p) {
    return p.count(ActorPhase::ready) == 0 &&
           (p.count(ActorPhase::starting) > 0 || p.count(ActorPhase::held) > 0);
  });
}

void Driver::restart_long_held() {
  const auto now = Clock::now();
  for (std::size_t p = 0; p < pool_states_.size(); ++p) {
    for (int actor : pool_states_[p].overdue_holds(now)) {
      if (!pools_->restart_held(static_cast<int>(p), actor)) continue;
      if (apply({.kind = ActorEvent::Kind::restarting,
                 .pool = static_cast<int>(p),
                 .actor = actor,
                 .at = now,
                 .error = {}}))
        ++restarted_[p];
    }
  }
}

}  // namespace rayorch::detail
