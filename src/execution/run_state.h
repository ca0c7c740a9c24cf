// The driver-side state of one run: input-batch admission, engine selection for idle
// workers, root delivery, metrics, and the events its observers receive (the progress line,
// trace and report are observers: execution/observers). Used by the driver only.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rayorch/executor.h"

#include "execution/block_store.h"
#include "execution/invoke.h"
#include "program/plan.h"
#include "runtime/engine.h"

namespace rayorch::detail {

/// One RPC handed to an actor.
struct Dispatch {
  Engine* engine = nullptr;
  Invocation batch;
};

class RunState {
 public:
  /// `store` holds this run's blocks (made by the run's pools: WorkerPools::make_store).
  RunState(std::shared_ptr<const RuntimePlan> plan, std::unique_ptr<BlockStore> store,
           SourceData sources, const RunOptions& options, const RootSink& sink,
           std::vector<int> actors_per_pool, bool wire = false);

  /// Tells the observers the run starts; call once, before the first admit().
  void begin();
  /// Admits input batches up to the active limit.
  void admit();
  /// Finds dispatchable work for `pool`: lowest input batch first, Calls round-robin. With
  /// `may_wait` (another RPC is running), a Call with a batch_wait may hold back a batch
  /// smaller than batch_size while its upstream is unsealed, up to that wait.
  std::optional<Dispatch> pick(int pool, bool may_wait = false);
  /// When the earliest batch_wait hold expires (time_point::max() when none is held).
  std::chrono::steady_clock::time_point next_hold_deadline() const;
  /// Advances every engine, delivers finished roots, retires complete batches, admits more.
  /// Throws ExecutionError on a fatal data error or a deadlock.
  void settle();
  /// True when every row is delivered and every batch retired.
  bool done() const;

  /// Records a finished RPC in the metrics and tells the observers.
  void record_rpc(const Dispatch& d, int actor, std::chrono::steady_clock::time_point start,
                  std::chrono::steady_clock::time_point end, const char* status);

  /// Applies a successful attempt (stores its blocks, commits its report); throws
  /// ExecutionError on a contract error.
  void apply_result(Dispatch& d, Attempt& attempt);
  /// Applies a UDF exception; throws ExecutionError when the policy aborts.
  void apply_failure(Dispatch& d, const std::string& error);
  /// Applies a lost actor; throws ExecutionError when the budget is exhausted.
  void apply_lost(Dispatch& d, const std::string& reason);

  /// Offers the late report of an abandoned attempt to its engine, which rejects it.
  void reject_late(Report& report);
  /// Counts a report rejected without an engine (its attempt belongs to an earlier run).
  void count_stale_report() { ++metrics_.stale_reports_rejected; }

  /// Sends the observers a progress event when the last one is older than 250 ms.
  void tick();
  /// Finishes metrics and ends the run for the observers (the trace and report are written
  /// then); an observer's failure there (a file that cannot be written) is recorded in
  /// RunMetrics::file_errors (and on stderr), not thrown.
  RunMetrics finish();
  /// The run is aborting with `error`: ends it for the observers, marked aborted (the trace
  /// and report say so). Never throws.
  void write_aborted(const std::string& error) noexcept;
  /// Seconds since the run started.
  double now_seconds() const;
  const RuntimePlan& plan() const { return *plan_; }
  /// The blocks of this run (driver thread only).
  const BlockStore& store() const { return *store_; }
  std::uint64_t& actors_replaced() { return metrics_.actors_replaced; }

 private:
  void retire(std::size_t slot);
  void fold_counters(const Engine& e);
  bool held_back(int call) const;
  void end_run(bool aborted, const std::string& error);
  void emit_progress(bool final);
  void apply_store_commands(Engine& e);
  void count_failed_root(std::size_t row);
  // The caller's index of source row `row` (SourceData::original_rows).
  std::size_t caller_row(std::size_t row) const;

  std::shared_ptr<const RuntimePlan> plan_;
  SourceData sources_;
  std::unique_ptr<BlockStore> store_;
  bool wire_ = false;  // store commands cross as bytes (testing::SyncOptions)
  std::vector<int> actors_per_pool_;
  RunOptions options_;
  const RootSink& sink_;
  std::size_t batch_rows_;
  std::size_t batch_count_;
  std::size_t next_batch_ = 0;
  std::vector<std::unique_ptr<Engine>> active_;  // ordered by batch index
  std::vector<std::size_t> rr_;                  // round-robin cursor per pool
  // Per Call: the Calls that read its outputs (through filters, broadcasts and expands),
  // and how many of their READY Grains hold it back (RunOptions::backpressure).
  std::vector<std::vector<int>> consumers_;
  std::vector<std::size_t> backlog_limit_;
  // Per Call: the Calls upstream of it, and since when a small batch has been held back
  // for batch_wait (time_point::max(): not held).
  std::vector<std::vector<int>> upstream_;
  std::vector<std::chrono::steady_clock::time_point> hold_since_;
  bool wait_for_batch(const Engine& e, int call, std::chrono::steady_clock::time_point now);
  std::size_t roots_delivered_ = 0;
  // Error budget (RunOptions::max_failed_roots / max_failed_fraction).
  std::size_t failed_roots_ = 0;
  std::vector<std::string> first_causes_;
  std::string budget_error_;  // set once the budget is exceeded
  std::chrono::steady_clock::time_point start_;
  RunMetrics metrics_;
  std::vector<std::shared_ptr<RunObserver>> observers_;  // the user's, then the built-ins
  bool wants_parents_ = false;
  bool ended_ = false;
  std::chrono::steady_clock::time_point last_progress_;
  std::vector<CallProgress> progress_;  // reused
  std::vector<std::uint64_t> done_per_call_;
  std::vector<std::uint64_t> in_flight_per_call_;  // Grains reserved and not yet reported
  // Reused buffers for root delivery.
  std::vector<Outcome> outcomes_;
  std::vector<const std::string*> causes_;
  std::vector<Binding> values_;
  std::vector<ErasedOutput> erased_;
};

}  // namespace rayorch::detail
