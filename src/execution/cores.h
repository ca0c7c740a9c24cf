// How an execution core is made: the one driver (execution/driver.h) over some WorkerPools.
// What a backend outside the engine (the Python extension's Ray pools, a test's lossy pools)
// needs to put its pools under the driver, without seeing the driver's or the run's state.
#pragma once

#include <memory>

#include "rayorch/executor.h"

#include "execution/run/pool_sizing.h"
#include "execution/worker_pool.h"
#include "execution/worker_server.h"

namespace rayorch::detail {

struct DriverOptions {
  /// Keep the log of every RPC (testing::SyncExecutor::rpc_log()).
  bool keep_rpc_log = false;
  /// Store commands cross as bytes too (testing::SyncOptions::wire_protocol).
  bool wire = false;
  /// Self-sizing pools (DESIGN 6.1.7): what they may hold, and the policy's
  /// settings.
  ResourceBudget budget;
  SizingConfig sizing;
};

/// The driver over `pools`, which it owns; their actors may still be starting. Throws
/// ExecutionError when a self-sizing pool's minimum cannot fit the budget.
std::unique_ptr<ExecutionCore> make_driven_core(std::shared_ptr<const RuntimePlan> plan,
                                                std::unique_ptr<WorkerPools> pools,
                                                DriverOptions options);

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
