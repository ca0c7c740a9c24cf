// Deterministic execution for tests: ro::testing::SyncExecutor.
#pragma once

#include <vector>

#include "rayorch/executor.h"

namespace rayorch::testing {

/// Runs a program deterministically on the calling thread: one UDF instance per pool, FIFO
/// queues, pools served in a fixed round-robin. Records every RPC (Call, Grain keys,
/// generation) so tests can assert exact dispatch sequences.
template <class P>
class SyncExecutor : public rayorch::detail::RunApiOf<P> {
 public:
  explicit SyncExecutor(const Compiled<P>& program)
      : rayorch::detail::RunApiOf<P>(rayorch::detail::make_sync_core(program.plan())) {}

  /// Every RPC of every run so far, in dispatch order.
  const std::vector<RpcRecord>& rpcs() const { return this->core().rpc_log(); }
};

template <class P>
SyncExecutor(const Compiled<P>&) -> SyncExecutor<P>;

}  // namespace rayorch::testing
