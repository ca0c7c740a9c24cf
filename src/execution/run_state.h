// The driver-side state of one run, composed of one part per job (execution/run/):
// input-batch admission (InputBatches), work selection for idle workers (Scheduler), root
// delivery and the error budget (RootDelivery), metrics (RunRecorder) and the events its
// observers receive (RunEvents; the progress line, trace and report are observers:
// execution/observers). The driver talks to it through the operations below only, in the
// terms of the worker protocol (an RPC is its Invocation): it never sees an Engine.
//
// Threading: the driver thread only.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rayorch/executor.h"

#include "execution/block_store.h"
#include "execution/invoke.h"
#include "execution/run/input_batches.h"
#include "execution/run/root_delivery.h"
#include "execution/run/run_events.h"
#include "execution/run/run_recorder.h"
#include "execution/run/scheduler.h"
#include "execution/worker_pool.h"
#include "program/plan.h"
#include "runtime/engine.h"

namespace rayorch::detail {

class RunState {
 public:
  /// `options` passed check_run_options. `store` holds this run's blocks (made by the run's
  /// pools: WorkerPools::make_store).
  RunState(std::shared_ptr<const RuntimePlan> plan, std::unique_ptr<BlockStore> store,
           SourceData sources, const RunOptions& options, const RootCallback& sink,
           std::vector<int> actors_per_pool, bool wire = false);

  /// Tells the observers the run starts and delivers the restored roots; call once, before
  /// the first admit().
  void begin();
  /// Admits input batches up to the active limit (none once the error budget is spent).
  void admit();
  /// Finds dispatchable work for `pool`: lowest input batch first, Calls round-robin. With
  /// `may_wait` (another RPC is running), a Call with a batch_wait may hold back a batch
  /// smaller than batch_size while its upstream is unsealed, up to that wait. `max_ready`
  /// above 0 caps the READY Grains taken (the tail split, execution/run/tail_split.h).
  std::optional<Invocation> pick(int pool, bool may_wait = false, std::size_t max_ready = 0);
  /// When the earliest batch_wait hold expires (time_point::max() when none is held).
  std::chrono::steady_clock::time_point next_hold_deadline() const;
  /// The input values of a picked RPC, resolved in this run's blocks.
  ResolvedInputs resolve_inputs(const Invocation& rpc) const;
  /// What a crash record names for a picked RPC (execution/crash_record.h): its Call, its
  /// Module, its Grains' Entity keys (the first CrashLabel::kKeys) and its input batch.
  /// Allocates nothing.
  CrashLabel crash_label(const Invocation& rpc) const;
  /// Advances every engine, delivers finished roots, retires complete batches, admits more.
  /// Throws ExecutionError on a fatal data error or a deadlock.
  void settle();
  /// True when every row is delivered and every batch retired.
  bool done() const;

  /// What the lineage knows of the work of one pool's Calls, over the active input batches
  /// (read-only; the pool-sizing policy's input, DESIGN 6.1.7).
  struct PoolBacklog {
    std::uint64_t ready = 0;     ///< READY Grains
    std::uint64_t unsealed = 0;  ///< Grains created and not sealed (ready and in flight too)
    /// Grains can still be created for it: an upstream Call has unsealed Grains, or source
    /// rows are left to admit.
    bool more_can_arrive = false;
  };
  PoolBacklog backlog(int pool) const;

  /// The actors' starts known before the run (DESIGN 6.1.4), for its metrics; call once, before
  /// begin().
  void set_actor_starts(std::vector<PoolMetrics> pools) { recorder_.set_pools(std::move(pools)); }
  /// An actor of `pool` started (ready, or failed with `start.error`) at `at`; records it and
  /// tells the observers.
  void actor_started(int pool, const ActorStartMetrics& start,
                     std::chrono::steady_clock::time_point at);
  /// Tells the observers of a start that set_actor_starts() recorded already.
  void announce_actor_start(int pool, const ActorStartMetrics& start,
                            std::chrono::steady_clock::time_point at);
  /// Records a node the pools detected lost.
  void node_lost(const NodeLoss& loss);
  /// A self-sizing pool's target at the run's start (its first actors_over_time sample).
  void pool_size(int pool, int actors) { recorder_.pool_size(pool, actors); }
  /// A self-sizing pool's decision at `at`: records it and tells the observers.
  void pool_resized(int pool, int from, int to, const std::string& reason,
                    std::chrono::steady_clock::time_point at);
  /// Counts an actor replaced after a loss or a timeout.
  void count_replaced_actor(int pool) { recorder_.actor_replaced(pool); }

  /// Applies what an attempt of `rpc` on `actor` (of the RPC's pool) came to, after recording
  /// the RPC in the metrics and for the observers: a report is committed (its blocks stored
  /// first), a UDF exception goes to the Call's RecoveryPolicy, a lost actor replays the
  /// Grains (its replacement counted unless `replacement_counted`: another slot's loss of the
  /// same actor counted it), lost inputs are re-materialised. Throws ExecutionError on a
  /// contract error or when the policy or the replay budget ends the run.
  void apply_attempt(const Invocation& rpc, Attempt& attempt, int actor, bool replacement_counted);
  /// `rpc` ran past its pool's timeout, detected at `now`: its slot was given a fresh actor
  /// (counted here); records the RPC and replays its Grains as after a loss.
  void apply_timeout(const Invocation& rpc, int actor, std::chrono::steady_clock::time_point now);
  /// From now on every finished RPC is also appended to `log` (testing::SyncExecutor::rpc_log()).
  /// `log` is owned by the caller (it outlives the run) and must outlive this RunState.
  void keep_rpc_log(std::vector<RpcRecord>& log) { rpc_log_ = &log; }

  /// Offers the late report of an abandoned attempt to its engine, which rejects it.
  void reject_late(Report& report);
  /// Counts a report rejected without an engine (its attempt belongs to an earlier run).
  void count_stale_report() { recorder_.stale_report(); }

  /// Sends the observers a progress event when the last one is older than 250 ms.
  void tick();
  /// Finishes metrics and ends the run for the observers (the trace and report are written
  /// then); an observer's failure there (a file that cannot be written) is recorded in
  /// RunMetrics::file_errors (and on stderr), not thrown.
  RunMetrics finish();
  /// The run is aborting with `error`: ends it for the observers, marked aborted (the trace
  /// and report say so). Never throws.
  void write_aborted(const std::string& error) noexcept;

 private:
  void emit_progress(bool final);
  // Hands the next restored root (the caller's `row`) to the caller, then to on_root.
  void deliver_restored(std::size_t row, Outcome outcome);
  void apply_store_commands(Engine& e);
  // The engine of the input batch an RPC in flight belongs to (active while it is in flight).
  Engine& engine_of(const Invocation& rpc) const;
  // Records a finished RPC in the metrics (and the RPC log) and tells the observers.
  void record_rpc(const Invocation& rpc, Engine& engine, int actor,
                  std::chrono::steady_clock::time_point start,
                  std::chrono::steady_clock::time_point end, const char* status);
  void retire(std::size_t slot);
  RpcRecord rpc_record(const Invocation& rpc, const Engine& engine, bool failed) const;

  std::shared_ptr<const RuntimePlan> plan_;
  std::unique_ptr<BlockStore> store_;
  bool wire_ = false;  // store commands cross as bytes (testing::SyncOptions)
  std::vector<int> actors_per_pool_;
  RunRecorder recorder_;
  std::vector<RpcRecord>* rpc_log_ = nullptr;  // not owned; null unless keep_rpc_log()
  RunEvents events_;
  std::vector<std::size_t> rpc_roots_;  // RpcEvent::roots of the RPC being recorded
  InputBatches batches_;
  Scheduler scheduler_;
  RootDelivery delivery_;
  std::vector<CallProgress> progress_;       // reused
  std::vector<PoolProgress> pool_progress_;  // reused
  std::size_t restored_ = 0;                 // restored roots delivered so far
};

}  // namespace rayorch::detail
