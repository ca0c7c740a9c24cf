// One pool's runtime state as the driver sees it (DESIGN 6.1.5, 6.1.7): where each of its actors
// stands, when each became ready or was held, what its starts and its calls cost, and how many
// actors a self-sizing pool wants. The driver keeps one per pool for the executor's life; the
// pools' actors outlive a run, and so do their measurements.
//
// Actor phases, and the only transitions (ActorEvent::Kind):
//
//   event        from            to
//   starting     stopped         starting
//   ready        starting        ready
//   failed       starting        failed (for the executor's life)
//   held         ready           held
//   resumed      held            ready
//   restarting   ready, held     starting
//   retired      ready           stopped
//
// An event that its actor's phase does not allow is refused and changes nothing (apply()
// returns false): backends report what they saw, and a report can be overtaken (a `resumed`
// for an actor the driver restarted meanwhile, a start of one it never asked for).
//
// Invariants (check() verifies them; apply() keeps them): the phase counts sum to the actors,
// each count is the number of actors in that phase, "live" (starting, ready or held) is
// what a self-sizing pool holds against its target, and the pool has a time since which it
// waits for a first actor (unready_since()) exactly when it has actors starting and none
// ready or held.
//
// Pure state: no clock is read (every event carries its time), nothing is started or stopped
// (the driver tells the pools). Threading: the driver's thread only.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rayorch/metrics.h"

#include "execution/actor_event.h"
#include "execution/run/tail_split.h"

namespace rayorch::detail {

enum class ActorPhase { stopped, starting, ready, held, failed };

const char* to_string(ActorPhase phase);

/// A held actor is restarted only after at least this long: a hold this short ends by itself
/// (Ray reports the cancelled call), and a start measured near zero (constructors built
/// in-process) would otherwise restart every held actor at once.
inline constexpr std::chrono::seconds kHeldRestartFloor{1};

class PoolState {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::string name;  ///< the Module's name (metrics and messages)
    int actors = 0;
    int slots = 0;  ///< task slots over all its actors (WorkerPools::sizes())
    /// Where every actor starts: `ready` (built before the pools were returned), `starting`
    /// (eager start) or `stopped` (a self-sizing pool: the driver starts them).
    ActorPhase initial = ActorPhase::ready;
    bool sizes_itself = false;  ///< its target is the sizing policy's (then `initial` is stopped)
    Clock::time_point created;  ///< the executor's start: metrics count from it
  };

  explicit PoolState(Options options);

  /// Applies one event of one of this pool's actors (its `pool` is not read). True when it
  /// changed the state; false when the actor's phase does not allow it (nothing changes).
  bool apply(const ActorEvent& event);

  /// Throws std::logic_error naming the broken invariant. Tests call it after every event.
  void check() const;

  // --- Actors ---
  int actors() const { return static_cast<int>(actors_.size()); }
  ActorPhase phase(int actor) const { return actors_[static_cast<std::size_t>(actor)].phase; }
  int count(ActorPhase phase) const { return counts_[static_cast<std::size_t>(phase)]; }
  /// Starting, ready or held: what a self-sizing pool holds against its target.
  int live() const {
    return count(ActorPhase::starting) + count(ActorPhase::ready) + count(ActorPhase::held);
  }
  /// Every actor is ready (the common case: the driver then looks up no actor).
  bool all_ready() const { return count(ActorPhase::ready) == actors(); }
  /// No actor of the pool can ever run its Calls: every one failed, or (a self-sizing pool)
  /// every one it started did and none is starting. Constructor errors are taken as lasting.
  bool can_never_run() const;
  /// Actors that ever left `stopped` (for the message when the pool can never run).
  int tried() const;
  /// The first constructor error among its starts ("" when none failed).
  std::string first_error() const;
  /// When the actor's constructor last finished (the executor's start for an actor built
  /// before it returned).
  Clock::time_point ready_at(int actor) const {
    return actors_[static_cast<std::size_t>(actor)].ready_at;
  }
  /// Held actors held longer than a start of this pool takes (its measured mean, at least
  /// kHeldRestartFloor) at `now`: restarting one costs one start, while waiting for its hold
  /// to end may last until the cluster marks a lost node dead.
  std::vector<int> overdue_holds(Clock::time_point now) const;
  /// Since when the pool has had actors starting and none ready or held (its Calls wait for
  /// a first actor); nullopt while it has one, or none starting.
  std::optional<Clock::time_point> unready_since() const { return unready_since_; }
  /// The starting actors, once the pool has waited `timeout` for a first actor at `now`
  /// (unready_since()); otherwise none. The driver fails them for backends that bound a
  /// start (WorkerPools::start_timeout(): Ray actors a cluster cannot place).
  std::vector<int> overdue_starts(Clock::time_point now, Clock::duration timeout) const;

  // --- Self-sizing ---
  bool sizes_itself() const { return options_.sizes_itself; }
  /// Actors the sizing policy wants (a fixed pool: its actors).
  int target() const { return target_; }
  void set_target(int target) { target_ = target; }

  // --- Measurements (kept across runs, as the actors are) ---
  /// An accepted call of `grains` Grains that ran `seconds`: busy time, throughput, cost fit.
  void record_call(std::size_t grains, double seconds);
  double busy_seconds() const { return busy_seconds_; }
  std::uint64_t grains_done() const { return grains_done_; }
  /// The mean constructor time of its finished starts; nullopt before the first.
  std::optional<double> mean_startup_seconds() const;
  /// The cost of its calls fitted so far (the tail split).
  const CallCostModel& call_cost() const { return call_cost_; }
  /// One slot per actor: when each actor is free follows from its slot's task (the tail split
  /// needs that; an actor with queued calls would need more).
  bool one_slot_per_actor() const { return options_.slots == actors(); }
  /// Its actors' starts so far, in the order they finished (RunMetrics::pools).
  const PoolMetrics& starts() const { return starts_; }
  const std::string& name() const { return options_.name; }

 private:
  struct Actor {
    ActorPhase phase = ActorPhase::stopped;
    Clock::time_point asked;       // when its current start was asked for
    Clock::time_point ready_at;    // when it last became ready
    Clock::time_point held_since;  // when its current hold began
  };

  bool apply_phase(const ActorEvent& event);  // apply() without the waiting time
  void move(Actor& actor, ActorPhase to);
  // Starting actors and none ready or held.
  bool waits_for_first_actor() const;
  // Sets or clears unready_since_ after an event at `at` (its invariant).
  void note_waiting(Clock::time_point at);
  void record_start(const ActorEvent& event);

  Options options_;
  std::vector<Actor> actors_;
  std::array<int, 5> counts_{};  // per ActorPhase; invariant: equals the phases' tally
  bool ever_ready_ = false;      // some actor became ready
  // Invariant: set exactly when count(starting) > 0 and count(ready) + count(held) == 0.
  std::optional<Clock::time_point> unready_since_;
  int target_ = 0;
  double startup_seconds_ = 0.0;  // summed constructor times of finished starts
  int startups_ = 0;
  double busy_seconds_ = 0.0;  // summed times of accepted calls
  std::uint64_t grains_done_ = 0;
  CallCostModel call_cost_;
  PoolMetrics starts_;
};

}  // namespace rayorch::detail
