// The one driver loop (DESIGN 6.1.1): admits input batches, hands READY work to idle slots
// of any backend (execution/worker_pool.h), commits their reports, enforces timeouts,
// replays the Grains of lost attempts, and detects deadlock. Every backend runs under this
// loop; none has its own. A rayorch::RunInterrupted from a callback ends the run without
// closing the executor: the RPCs in flight are waited for (drain) and dropped.
//
// Actors: what the driver knows of each pool's actors is one PoolState
// (execution/run/pool_state.h), changed only by the ActorEvents the pools report
// (take_actor_events) and those the driver decides (a hold, a restart, a start or a
// retirement of a self-sizing pool's actor). Eager start (DESIGN 6.1.4): the pools may come
// while their actors' constructors still run; a slot is dispatched to once its actor is
// ready, and admission waits only for a ready actor of some Call that reads the sources. An
// actor whose constructor failed stays out of its pool for the executor's life; a pool none
// of whose actors can start ends the run with an ExecutionError and closes the executor. A
// pool that waits for a first actor longer than the pools' start_timeout() has its starts
// given up (abandon_overdue_starts), which is such a pool.
//
// Files: driver.cc the loop; driver_actors.cc the actor events; driver_sizing.cc
// self-sizing pools; driver_tail.cc the tail split.
//
// Threading: run() and close() are called from one thread at a time (the Executor's
// caller); the loop, the engines and the value store live on that thread.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "rayorch/executor.h"

#include "execution/actor_event.h"
#include "execution/cores.h"
#include "execution/run/pool_sizing.h"
#include "execution/run/pool_state.h"
#include "execution/run_state.h"
#include "execution/worker_pool.h"

namespace rayorch::detail {

class Driver final : public ExecutionCore {
 public:
  /// Takes ownership of the pools; their actors may still be starting.
  Driver(std::shared_ptr<const RuntimePlan> plan, std::unique_ptr<WorkerPools> pools,
         DriverOptions options);
  ~Driver() override;

  RunMetrics run(SourceData sources, const RunOptions& options, const RootCallback& sink) override;
  void await_actors() override;
  void close() override;
  bool closed() const override { return closed_; }
  const std::vector<RpcRecord>& rpc_log() const override { return log_; }
  std::uint64_t plan_fingerprint() const override;

 private:
  using Clock = std::chrono::steady_clock;

  // One task slot of a pool (WorkerPools::sizes()): the RPC it runs, if any.
  struct Slot {
    std::optional<Invocation> current;
    Clock::time_point deadline = Clock::time_point::max();
    Clock::time_point dispatched{};  // when `current` was handed to it
  };

  // An actor start the driver applied, for the observers.
  struct FreshStart {
    int pool = -1;
    ActorStartMetrics start;
    Clock::time_point at;
  };

  // The loop (driver.cc): admit, settle, dispatch, handle, deliver.
  RunMetrics drive(RunState& state);
  void dispatch(RunState& state);
  void handle(RunState& state, WorkerResult& result);
  void expire(RunState& state);
  void drain();  // waits out the RPCs in flight after an interrupt
  Clock::time_point next_deadline() const;
  Invocation take_rpc(Slot& slot);  // the slot's RPC ended or was abandoned: the slot is idle
  bool takes_tasks(std::size_t pool, std::size_t slot) const {
    const PoolState& state = pool_states_[pool];
    return state.all_ready() ||
           state.phase(pools_->actor_of(static_cast<int>(pool), static_cast<int>(slot))) ==
               ActorPhase::ready;
  }

  // Actors (driver_actors.cc): what the pools report and what the driver decides about its
  // actors, applied to their PoolState.
  // Applies `event` to its pool's state (false: refused, nothing changed); a start it
  // applies is left in fresh_ for the run.
  bool apply(const ActorEvent& event);
  // Applies the events the pools reported (those drain() put aside first), then
  // abandon_overdue_starts().
  void apply_reported();
  // Fails the starting actors of every pool that waited longer than the pools' start_timeout()
  // for a first actor (the pools stop those starts and say why).
  void abandon_overdue_starts();
  // Throws ExecutionError (closing the executor) when a pool has no actor that could start.
  void fail_dead_pools();
  // apply_reported(), tells the run of each new start and restart, then fail_dead_pools();
  // records the node losses the pools detected meanwhile too (both come in after each wait).
  void take_actor_events(RunState& state);
  // Waits until some Call that reads the sources has a ready actor.
  void await_source_actor(RunState& state);
  // Some pool has no ready actor yet but one still starting or held: its work waits for it,
  // which is not a deadlock.
  bool waiting_for_actors() const;
  // Restarts (WorkerPools::restart_held) every actor held longer than a start of its pool
  // takes (PoolState::overdue_holds).
  void restart_long_held();

  // Self-sizing pools (DESIGN 6.1.7; driver_sizing.cc). The targets live across
  // runs; the policy is asked at most every 100 ms, or at once when the loop would otherwise idle.
  // Sets the first targets within the budget and starts them; throws ExecutionError naming
  // a Module whose min_replicas cannot fit.
  void init_sizing();
  // At a run's start: samples the targets and gives a pool that reads the sources an actor.
  void begin_sizing(RunState& state);
  // Asks the policy and applies its decisions; true when an actor was started.
  bool resize(RunState& state, bool force);
  // Sets a pool's target: starts stopped actors up to it, retires idle ready actors above it
  // (busy or starting ones retire when idle: retire_surplus). True when one was started.
  bool apply_target(std::size_t pool, int to);
  // Retires (pool, slot) when its pool holds more actors than its target; true if it did.
  bool retire_surplus(std::size_t pool, std::size_t slot);
  PoolDemand demand(const RunState& state, std::size_t pool) const;

  // The tail split (execution/run/tail_split.h; driver_tail.cc): the READY Grains the idle
  // `slot` of `pool` takes, 0 for a full batch.
  std::size_t tail_cap(const RunState& state, std::size_t pool, std::size_t slot) const;
  // An idle slot of the actor that holds most of `inputs` (WorkerPools::holder_of), else
  // `slot`; for the pools that place by inputs only.
  std::size_t local_slot(std::size_t pool, std::size_t slot, const ResolvedInputs& inputs) const;

  std::shared_ptr<const RuntimePlan> plan_;
  std::unique_ptr<WorkerPools> pools_;
  DriverOptions options_;
  Clock::time_point created_;  // the executor's start (metrics)
  // Per pool, for the executor's life: its actors and their measurements.
  std::vector<PoolState> pool_states_;
  std::vector<std::vector<Slot>> slots_;  // per pool, per slot
  std::vector<char> places_by_inputs_;    // per pool: WorkerPools::places_by_inputs
  std::vector<int> source_pools_;         // pools of the Calls that read the sources
  // Dispatch: invariant outstanding_ == the slots with a `current`, at most max_outstanding_.
  std::size_t max_outstanding_ = 0;
  std::size_t outstanding_ = 0;
  std::size_t cursor_ = 0;  // the pool the next dispatch sweep starts at
  // Per pool, set by each run: its tasks carry a crash label (RunOptions::crash_record and
  // the pool runs in the driver's process).
  std::vector<char> crash_labels_;
  // Self-sizing pools (init_sizing()): on when the pools can resize and some pool sizes itself.
  bool sizing_ = false;
  std::optional<PoolSizer> sizer_;
  Clock::time_point next_resize_{};
  // What the actors did that the run has not heard of yet.
  std::vector<ActorEvent> reported_;        // reused by apply_reported()
  std::vector<ActorEvent> drained_events_;  // taken by drain(), applied in the next run
  std::vector<FreshStart> fresh_;           // starts applied, not announced yet
  std::vector<int> restarted_;              // per pool: idle actors restarted, not counted yet
  std::vector<FreshStart> unannounced_;     // applied by await_actors(), for the next run
  std::vector<NodeLoss> node_losses_;       // reused
  std::vector<WorkerResult> results_;       // reused
  std::vector<WorkerResult> late_results_;  // taken by await_actors(), for the next run
  std::uint64_t run_ = 0;
  bool closed_ = false;
  std::vector<RpcRecord> log_;
};

}  // namespace rayorch::detail
