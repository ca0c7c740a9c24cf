// The one driver loop (DESIGN 6.1): admits input batches, hands READY work to idle workers
// of any backend (execution/worker_pool.h), commits their reports, enforces timeouts,
// replaces lost workers and replays their Grains, and detects deadlock. Every backend runs
// under this loop; none has its own. A rayorch::RunInterrupted from a callback ends the run
// without closing the executor: the RPCs in flight are waited for (drain) and dropped.
//
// Threading: run() and close() are called from one thread at a time (the Executor's
// caller); the loop, the engines and the value store live on that thread.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "rayorch/executor.h"

#include "execution/run_state.h"
#include "execution/worker_pool.h"
#include "execution/worker_server.h"

namespace rayorch::detail {

struct DriverOptions {
  /// Keep the log of every RPC (testing::SyncExecutor::rpc_log()).
  bool keep_rpc_log = false;
  /// Store commands cross as bytes too (testing::SyncOptions::wire_protocol).
  bool wire = false;
};

class Driver final : public ExecutionCore {
 public:
  /// Takes ownership of started pools (every constructor has finished).
  Driver(std::shared_ptr<const RuntimePlan> plan, std::unique_ptr<WorkerPools> pools,
         DriverOptions options);
  ~Driver() override;

  RunMetrics run(SourceData sources, const RunOptions& options, const RootSink& sink) override;
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
  };

  RunMetrics drive(RunState& state);
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
  std::size_t cursor_ = 0;  // the pool the next dispatch sweep starts at
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

}  // namespace rayorch::detail
