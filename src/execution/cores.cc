// The cores the executors are made of: the local backend's thread pools or the synchronous
// inline pools, each under the one driver (driver.h).
#include <memory>

#include "execution/backends/backends.h"
#include "execution/driver.h"

namespace rayorch::detail {

std::unique_ptr<ExecutionCore> make_driven_core(std::shared_ptr<const RuntimePlan> plan,
                                                std::unique_ptr<WorkerPools> pools,
                                                DriverOptions options) {
  return std::make_unique<Driver>(std::move(plan), std::move(pools), std::move(options));
}

std::unique_ptr<ExecutionCore> make_local_core(std::shared_ptr<const RuntimePlan> plan,
                                               const LocalBackend& backend) {
  return make_local_core(std::move(plan), WorkerServerLaunch{}, backend);
}

std::unique_ptr<ExecutionCore> make_local_core(std::shared_ptr<const RuntimePlan> plan,
                                               const WorkerServerLaunch& launch) {
  return make_local_core(std::move(plan), launch, LocalBackend{});
}

std::unique_ptr<ExecutionCore> make_local_core(std::shared_ptr<const RuntimePlan> plan,
                                               const WorkerServerLaunch& launch,
                                               const LocalBackend& backend) {
  auto pools = make_thread_pools(plan, launch);
  DriverOptions options;
  options.budget = backend.budget;
  options.sizing.random_seed = backend.random_resize_seed;
  return std::make_unique<Driver>(std::move(plan), std::move(pools), options);
}

std::unique_ptr<ExecutionCore> make_sync_core(std::shared_ptr<const RuntimePlan> plan, bool wire) {
  auto pools = make_inline_pools(plan, wire);
  return std::make_unique<Driver>(std::move(plan), std::move(pools),
                                  DriverOptions{.keep_rpc_log = true, .wire = wire});
}

}  // namespace rayorch::detail
