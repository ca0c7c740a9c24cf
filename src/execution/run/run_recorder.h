// The metrics of one run as they accumulate (rayorch/metrics.h), and the per-Call counts
// progress events show.
//
// Threading: the driver thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "rayorch/executor.h"
#include "rayorch/metrics.h"

#include "program/plan.h"
#include "runtime/engine.h"

namespace rayorch::detail {

class RunRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  /// Starts the run's clock. `actors_per_pool` as WorkerPools::actors().
  RunRecorder(const RuntimePlan& plan, const SourceData& sources,
              const std::vector<int>& actors_per_pool);

  Clock::time_point start() const { return start_; }
  /// Seconds since the run started.
  double now_seconds() const;
  /// Seconds from the run's start to `t`.
  double seconds_at(Clock::time_point t) const;

  /// Input batch `index` (rows [first, first + rows)) was admitted; `active` are admitted now.
  void batch_admitted(std::size_t index, std::size_t first, std::size_t rows, std::size_t active);
  /// Folds a batch's engine counters in; at its retirement, and at the end for the others.
  void fold(const Engine& e);

  /// `grains` Grains of `call` were handed to a worker.
  void dispatched(int call, std::size_t grains);
  /// An RPC of `grains` Grains of `call` (of input batch `input_batch`, when known) ended
  /// with `status` after `seconds`.
  void rpc_ended(int call, std::size_t grains, std::optional<std::size_t> input_batch,
                 double seconds, std::string_view status);
  /// `grains` reports of `call` were accepted.
  void accepted(int call, std::size_t grains) { done_per_call_[call] += grains; }
  /// Root `row` (of the rows run) was delivered with `outcome`; returns its completion time.
  double root_delivered(std::size_t row, Outcome outcome);
  /// A lazy source's chunk restored a root from the run journal (SourceChunk::restored;
  /// those of SourceData::restored are counted at construction).
  void root_restored(Outcome outcome);
  void stale_report() { ++metrics_.stale_reports_rejected; }
  /// The actors' starts known when the run began (the executor's, DESIGN 6.1.4).
  void set_pools(std::vector<PoolMetrics> pools) { metrics_.pools = std::move(pools); }
  /// An actor of `pool` started during the run.
  void actor_started(int pool, ActorStartMetrics start) {
    metrics_.pools[pool].started.push_back(std::move(start));
  }
  /// An actor of `pool` was replaced (lost, timed out or restarted).
  void actor_replaced(int pool);
  void node_lost(NodeLossMetrics loss) { metrics_.node_losses.push_back(std::move(loss)); }
  /// A self-sizing pool's decision (DESIGN 6.1.7).
  void pool_resized(int pool, PoolResizeMetrics resize) {
    PoolMetrics& m = metrics_.pools[pool];
    if (resize.to != resize.from) m.actors_over_time.emplace_back(resize.seconds, resize.to);
    m.resizes.push_back(std::move(resize));
  }
  /// A self-sizing pool's actors when the run starts.
  void pool_size(int pool, int actors) {
    metrics_.pools[pool].actors_over_time.emplace_back(0.0, actors);
  }
  void rebuild_ended(double seconds) { metrics_.rebuild_seconds += seconds; }

  /// Grains of `call` accepted so far, and handed out without a report yet.
  std::uint64_t done(int call) const { return done_per_call_[call]; }
  std::uint64_t in_flight(int call) const { return in_flight_per_call_[call]; }

  /// Stamps the elapsed time; with `complete`, the derived figures (mean batch fill) too.
  void close(bool complete);
  const RunMetrics& metrics() const { return metrics_; }
  /// An observer's failure at the end of the run (the file it writes).
  void file_error(std::string message) { metrics_.file_errors.push_back(std::move(message)); }
  /// Hands the metrics over; the recorder is spent.
  RunMetrics take() { return std::move(metrics_); }

 private:
  Clock::time_point start_;
  bool per_root_times_;  // false over a lazy source: RunMetrics::root_completed_seconds stays empty
  RunMetrics metrics_;
  std::vector<std::uint64_t> done_per_call_;
  std::vector<std::uint64_t> in_flight_per_call_;
  std::vector<int> call_pools_;  // per Call: its pool
};

}  // namespace rayorch::detail
