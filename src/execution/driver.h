// The one driver loop (DESIGN 6.1): admits input batches, hands READY work to idle workers
// of any backend (execution/worker_pool.h), commits their reports, enforces timeouts,
// replaces lost workers and replays their Grains, and detects deadlock. Every backend runs
// under this loop; none has its own. A rayorch::RunInterrupted from a callback ends the run
// without closing the executor: the RPCs in flight are waited for (drain) and dropped.
//
// Eager start: the pools may come while their actors' constructors still run
// (WorkerPools::starts_in_background). A worker is dispatched to once its actor is ready;
// admission waits only for a ready actor of some Call that reads the sources. An actor whose
// constructor failed stays out of its pool for the executor's life; a pool whose every actor
// failed ends the run with an ExecutionError and closes the executor.
//
// Threading: run() and close() are called from one thread at a time (the Executor's
// caller); the loop, the engines and the value store live on that thread.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "rayorch/executor.h"

#include "execution/run/pool_sizing.h"
#include "execution/run/tail_split.h"
#include "execution/run_state.h"
#include "execution/worker_pool.h"
#include "execution/worker_server.h"

namespace rayorch::detail {

struct DriverOptions {
  /// Keep the log of every RPC (testing::SyncExecutor::rpc_log()).
  bool keep_rpc_log = false;
  /// Store commands cross as bytes too (testing::SyncOptions::wire_protocol).
  bool wire = false;
  /// Self-sizing pools (DESIGN 6.1, self-sizing pools): what they may hold, and the policy's
  /// settings.
  ResourceBudget budget;
  SizingConfig sizing;
};

class Driver final : public ExecutionCore {
 public:
  /// Takes ownership of the pools; their actors may still be starting.
  Driver(std::shared_ptr<const RuntimePlan> plan, std::unique_ptr<WorkerPools> pools,
         DriverOptions options);
  ~Driver() override;

  RunMetrics run(SourceData sources, const RunOptions& options, const RootSink& sink) override;
  void await_actors() override;
  void close() override;
  bool closed() const override { return closed_; }
  const std::vector<RpcRecord>& rpc_log() const override { return log_; }
  std::uint64_t plan_fingerprint() const override;

 private:
  using Clock = std::chrono::steady_clock;

  // The driver's view of one worker.
  struct WorkerState {
    std::optional<Dispatch> current;  // the RPC it runs, if any
    Clock::time_point deadline = Clock::time_point::max();
    Clock::time_point dispatched{};  // when `current` was handed to it
  };

  // Where an actor's first constructor stands (eager start).
  // `stopped`: a self-sizing pool's slot that was not started or was retired.
  // `held`: ready, but still held by a task the pools reported early (WorkerResult::actor_held)
  // until they report it resumed.
  enum class ActorPhase { stopped, starting, ready, failed, held };

  RunMetrics drive(RunState& state);
  // An actor start the driver applied, for the observers.
  struct FreshStart {
    int pool = -1;
    ActorStartMetrics start;
    Clock::time_point at;
  };

  // Actors' starts (driver_actors.cc). Applies the starts the pools report (phases, counts,
  // starts_); the new ones are left in fresh_.
  void apply_starts();
  // Throws ExecutionError (closing the executor) when a pool has no actor that could start.
  void fail_dead_pools();
  // apply_starts(), tells the run of each new start, then fail_dead_pools(); records the
  // node losses the pools detected meanwhile too (both come in after each wait).
  void take_started(RunState& state);
  // Waits until some Call that reads the sources has a ready actor.
  void await_source_actor(RunState& state);
  bool ready(std::size_t pool, std::size_t slot) const {
    return all_ready_[pool] ||
           phases_[pool][static_cast<std::size_t>(pools_->actor_of(
               static_cast<int>(pool), static_cast<int>(slot)))] == ActorPhase::ready;
  }
  // Some pool has no ready actor yet but one still starting or held: its work waits for it,
  // which is not a deadlock.
  bool waiting_for_actors() const;
  // A ready actor that a task the pools reported early still holds takes no task until they
  // report it resumed (take_started()).
  void hold_actor(std::size_t pool, int actor);
  // Restarts (WorkerPools::restart_held) every actor held longer than a start of its pool
  // takes (its measured mean, at least kHeldRestartFloor): waiting for the hold to end may
  // last until the cluster marks a lost node dead, while a fresh actor costs one start.
  void restart_long_held();
  // A lost actor whose replacement starts in the background (WorkerResult::actor_restarting):
  // starting again, its start to come through take_started().
  void restart_actor(std::size_t pool, int actor);
  // Self-sizing pools (DESIGN 6.1, self-sizing pools; driver_sizing.cc). The targets live across
  // runs; the policy is asked at most every 100 ms, or at once when the loop would otherwise idle.
  // Sets the first targets within the budget and starts them; throws ExecutionError naming
  // a Module whose min_replicas cannot fit.
  void init_sizing();
  // At a run's start: samples the targets and gives a pool that reads the sources an actor.
  void begin_sizing(RunState& state);
  // Asks the policy and applies its decisions; true when an actor was started.
  bool resize(RunState& state, bool force);
  // Sets a pool's target: starts stopped slots up to it, retires idle ready actors above it
  // (busy or starting ones retire when idle: retire_surplus). True when one was started.
  bool apply_target(std::size_t pool, int to);
  // Retires (pool, slot) when its pool holds more actors than its target; true if it did.
  bool retire_surplus(std::size_t pool, std::size_t slot);
  PoolDemand demand(const RunState& state, std::size_t pool) const;
  // The tail split (execution/run/tail_split.h; driver_tail.cc): the READY Grains the idle
  // `slot` of `pool` takes, 0 for a full batch.
  std::size_t tail_cap(const RunState& state, std::size_t pool, std::size_t slot) const;
  void drain();  // waits out the RPCs in flight after an interrupt
  void dispatch(RunState& state);
  void handle(RunState& state, WorkerResult& result);
  void expire(RunState& state);
  Clock::time_point next_deadline() const;
  void log_rpc(const Dispatch& d, bool failed);

  std::shared_ptr<const RuntimePlan> plan_;
  std::unique_ptr<WorkerPools> pools_;
  DriverOptions options_;
  std::vector<std::vector<WorkerState>> workers_;
  std::size_t max_outstanding_ = 0;
  std::size_t outstanding_ = 0;
  std::size_t cursor_ = 0;                       // the pool the next dispatch sweep starts at
  Clock::time_point created_;                    // the executor's start (metrics)
  std::vector<std::vector<ActorPhase>> phases_;  // per pool, per actor
  std::vector<int> ready_actors_;                // per pool
  std::vector<int> failed_actors_;               // per pool
  std::vector<int> starting_actors_;             // per pool
  std::vector<int> held_actors_;                 // per pool: ready actors held (ActorPhase::held)
  std::vector<std::vector<Clock::time_point>> held_since_;  // per pool, per actor: its hold
  std::vector<bool> ever_ready_;                            // per pool: some actor became ready
  // Self-sizing pools (per pool; see init_sizing()).
  bool sizing_ = false;
  std::vector<bool> auto_;
  std::vector<int> target_;                            // actors wanted (auto pools)
  std::vector<int> live_;                              // actors starting or ready
  std::vector<std::vector<Clock::time_point>> asked_;  // when each actor was started
  // When each actor's constructor last finished (its busy share counts from then; the tail
  // split); the executor's start for actors built before it returned.
  std::vector<std::vector<Clock::time_point>> ready_at_;
  std::vector<double> startup_seconds_;  // summed constructor times
  std::vector<int> startups_;
  std::vector<double> busy_seconds_;  // summed RPC times of accepted attempts
  std::vector<std::uint64_t> grains_done_;
  // Per pool: the cost of its calls, fitted over every accepted one (the tail split); kept
  // across runs, as the actors are.
  std::vector<CallCostModel> call_costs_;
  // Per pool: one slot per actor (the tail split needs when each actor is free; an actor
  // with queued calls would need more than its slot's last dispatch).
  std::vector<bool> one_slot_per_actor_;
  std::optional<PoolSizer> sizer_;
  Clock::time_point next_resize_{};
  std::vector<bool> all_ready_;             // per pool: every actor is ready
  std::vector<int> source_pools_;           // pools of the Calls that read the sources
  std::vector<PoolMetrics> starts_;         // the actors' starts so far
  std::vector<ActorStart> started_;         // reused
  std::vector<NodeLoss> node_losses_;       // reused
  std::vector<ActorStart> drained_starts_;  // taken by drain(), applied in the next run
  std::vector<FreshStart> fresh_;           // reused by apply_starts()
  // Per pool: actors apply_starts() saw restarting (lost while idle), not counted yet.
  std::vector<int> restarted_;
  std::vector<FreshStart> unannounced_;     // applied by await_actors(), for the next run
  std::vector<WorkerResult> late_results_;  // taken by await_actors(), for the next run
  std::uint64_t run_ = 0;
  bool closed_ = false;
  std::vector<RpcRecord> log_;
  std::vector<WorkerResult> results_;  // reused
};

/// The local backend whose process-isolated pools start their worker server through `launch`
/// (execution/worker_server.h); make_local_core(plan, LocalBackend) forks it from this
/// process. Throws ExecutionError as make_local_core does.
std::unique_ptr<ExecutionCore> make_local_core(std::shared_ptr<const RuntimePlan> plan,
                                               const WorkerServerLaunch& launch);
/// The same with the self-sizing pools' budget and settings of `backend`.
std::unique_ptr<ExecutionCore> make_local_core(std::shared_ptr<const RuntimePlan> plan,
                                               const WorkerServerLaunch& launch,
                                               const LocalBackend& backend);

}  // namespace rayorch::detail
