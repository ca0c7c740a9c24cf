// Root delivery: hands each finished root of an input batch to the run's sink (the
// RunResult or the streaming callback), in the order its engine finished them, with its
// outputs resolved from the block store; counts it in the metrics, the error budget and the
// observers' on_root.
//
// Threading: the driver thread only; the sink runs on it.
#pragma once

#include <string>
#include <vector>

#include "rayorch/executor.h"

#include "execution/block_store.h"
#include "execution/run/error_budget.h"
#include "execution/run/input_batches.h"
#include "execution/run/run_events.h"
#include "execution/run/run_recorder.h"
#include "runtime/engine.h"

namespace rayorch::detail {

class RootDelivery {
 public:
  RootDelivery(const RunOptions& options, const RootCallback& sink);

  /// Delivers every root `e` finished since the last call, resolving values in `store`.
  void deliver(Engine& e, BlockStore& store, const InputBatches& batches, RunRecorder& recorder,
               RunEvents& events);
  /// Roots delivered so far (restored ones excluded).
  std::size_t delivered() const { return delivered_; }
  const ErrorBudget& budget() const { return budget_; }

 private:
  const RootCallback& sink_;
  ErrorBudget budget_;
  std::size_t delivered_ = 0;
  // Reused from root to root.
  std::vector<Outcome> outcomes_;
  std::vector<const std::string*> causes_;
  std::vector<Binding> values_;
  std::vector<std::uint32_t> items_;  // per output: its Items in outcomes_ and values_
  std::vector<Binding> present_;

  // True when some of the present outputs of `root` (outcomes_, values_) were lost with their
  // storage: the engine rebuilds them and finishes the root again later.
  bool lost_outputs(Engine& e, std::uint32_t root, BlockStore& store);
  std::vector<ErasedOutput> erased_;
};

}  // namespace rayorch::detail
