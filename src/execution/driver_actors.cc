// The driver's view of its actors' starts (DESIGN 6.1, eager start): which actors are ready,
// starting or failed, a pool none of whose actors can start, and the waits for the first
// ready actors before a run. Actors start while the driver runs (WorkerPools::take_started
// reports them); everything here runs on the driver's thread. See driver.h.
#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "rayorch/errors.h"

#include "execution/driver.h"

namespace rayorch::detail {
namespace {

// A held actor is never restarted sooner: a hold this short ends by itself (Ray reports the
// cancelled call), and a start measured near zero (constructors built in-process) would
// otherwise restart every held actor at once.
constexpr std::chrono::seconds kHeldRestartFloor{1};

// The first constructor error among a pool's starts.
std::string first_error(const PoolMetrics& pool) {
  for (const ActorStartMetrics& s : pool.started) {
    if (!s.error.empty()) return s.error;
  }
  return {};
}

}  // namespace

void Driver::apply_starts() {
  fresh_.clear();
  started_.swap(drained_starts_);  // those drain() put aside come first
  drained_starts_.clear();
  pools_->take_started(started_);
  for (ActorStart& s : started_) {
    const auto p = static_cast<std::size_t>(s.pool);
    const auto a = static_cast<std::size_t>(s.actor);
    if (p >= phases_.size() || a >= phases_[p].size()) continue;
    if (s.restarting) {
      restart_actor(p, s.actor);
      ++restarted_[p];
      continue;
    }
    if (s.resumed) {
      if (phases_[p][a] == ActorPhase::held) {
        phases_[p][a] = ActorPhase::ready;
        --held_actors_[p];
        all_ready_[p] = ++ready_actors_[p] == static_cast<int>(phases_[p].size());
      }
      continue;
    }
    if (phases_[p][a] != ActorPhase::starting) continue;
    const ActorStartMetrics m{
        .actor = s.actor,
        .started_seconds = std::max(0.0, std::chrono::duration<double>(s.at - created_).count()),
        .error = s.error};
    starts_[p].started.push_back(m);
    const int actors = static_cast<int>(phases_[p].size());
    --starting_actors_[p];
    if (s.error.empty()) {
      phases_[p][a] = ActorPhase::ready;
      ready_at_[p][a] = s.at;
      all_ready_[p] = ++ready_actors_[p] == actors;
      ever_ready_[p] = true;
      startup_seconds_[p] += std::chrono::duration<double>(s.at - asked_[p][a]).count();
      ++startups_[p];
    } else {
      phases_[p][a] = ActorPhase::failed;
      ++failed_actors_[p];
      --live_[p];
    }
    fresh_.push_back(FreshStart{.pool = s.pool, .start = m, .at = s.at});
  }
}

void Driver::fail_dead_pools() {
  for (std::size_t p = 0; p < phases_.size(); ++p) {
    const int actors = static_cast<int>(phases_[p].size());
    // Every actor failed, or (a self-sizing pool) every one it started did and none is
    // starting: constructor errors are taken as lasting, so no more are tried.
    const bool all_failed = actors > 0 && failed_actors_[p] == actors;
    const bool started_failed =
        failed_actors_[p] > 0 && starting_actors_[p] == 0 && !ever_ready_[p];
    if (!all_failed && !started_failed) continue;
    // No actor of this pool can ever run its Calls: the executor cannot run the program.
    close();
    const auto tried =
        static_cast<int>(std::count_if(phases_[p].begin(), phases_[p].end(),
                                       [](ActorPhase a) { return a != ActorPhase::stopped; }));
    throw ExecutionError(
        fmt::format("no actor of Module<{}> could start ({} of {} failed); the first error: {}",
                    plan_->pools[p].name, failed_actors_[p], tried, first_error(starts_[p])));
  }
}

void Driver::take_started(RunState& state) {
  apply_starts();
  restart_long_held();
  for (const FreshStart& f : fresh_) state.actor_started(f.pool, f.start, f.at);
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
    apply_starts();
    unannounced_.insert(unannounced_.end(), fresh_.begin(), fresh_.end());
    fail_dead_pools();
    // A self-sizing pool with no actor started has nothing to wait for.
    bool all = true;
    for (std::size_t p = 0; p < ready_actors_.size(); ++p) {
      if (ready_actors_[p] == 0 && (!sizing_ || !auto_[p] || starting_actors_[p] > 0)) all = false;
    }
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
    return std::any_of(source_pools_.begin(), source_pools_.end(),
                       [this](int p) { return ready_actors_[static_cast<std::size_t>(p)] > 0; });
  };
  while (!state.done() && !ready_source()) {
    results_.clear();
    pools_->wait(Clock::now() + std::chrono::milliseconds(200), results_);
    for (WorkerResult& r : results_) handle(state, r);  // late results of earlier runs only
    take_started(state);
    state.tick();
  }
}

bool Driver::waiting_for_actors() const {
  for (std::size_t p = 0; p < phases_.size(); ++p) {
    if (ready_actors_[p] == 0 && (starting_actors_[p] > 0 || held_actors_[p] > 0)) return true;
  }
  return false;
}

void Driver::hold_actor(std::size_t pool, int actor) {
  auto& phase = phases_[pool][static_cast<std::size_t>(actor)];
  if (phase != ActorPhase::ready) return;
  phase = ActorPhase::held;
  held_since_[pool][static_cast<std::size_t>(actor)] = Clock::now();
  --ready_actors_[pool];
  ++held_actors_[pool];
  all_ready_[pool] = false;
}

void Driver::restart_long_held() {
  const auto now = Clock::now();
  for (std::size_t p = 0; p < phases_.size(); ++p) {
    if (held_actors_[p] == 0) continue;
    const double start = startups_[p] > 0 ? startup_seconds_[p] / startups_[p] : 0.0;
    const auto wait =
        std::max(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(start)),
                 std::chrono::duration_cast<Clock::duration>(kHeldRestartFloor));
    for (std::size_t a = 0; a < phases_[p].size(); ++a) {
      if (phases_[p][a] != ActorPhase::held || now - held_since_[p][a] < wait) continue;
      if (!pools_->restart_held(static_cast<int>(p), static_cast<int>(a))) continue;
      restart_actor(p, static_cast<int>(a));
      ++restarted_[p];
    }
  }
}

void Driver::restart_actor(std::size_t pool, int actor) {
  const auto a = static_cast<std::size_t>(actor);
  auto& phase = phases_[pool][a];
  if (phase == ActorPhase::ready) {
    --ready_actors_[pool];
  } else if (phase == ActorPhase::held) {
    --held_actors_[pool];
  } else {
    return;
  }
  phase = ActorPhase::starting;
  ++starting_actors_[pool];
  asked_[pool][a] = Clock::now();
  all_ready_[pool] = false;
}

}  // namespace rayorch::detail
