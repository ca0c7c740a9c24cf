// Deterministic execution for tests: ro::testing::SyncExecutor.
#pragma once

#include <vector>

#include "rayorch/executor.h"

namespace rayorch::testing {

/// Options of a SyncExecutor.
struct SyncOptions {
  /// Every invocation, report and store command crosses as bytes (encoded, then decoded)
  /// before the other side sees it, as it would between processes: proves that the worker
  /// protocol is plain data.
  bool wire_protocol = false;
};

/// Runs a program deterministically on the calling thread: one UDF instance per pool, FIFO
/// queues, pools served in a fixed round-robin. Records every RPC (Call, Grain keys,
/// generation) so tests can assert exact dispatch sequences.
template <class P>
class SyncExecutor : public rayorch::detail::RunApiOf<P> {
 public:
  explicit SyncExecutor(const Compiled<P>& program, const SyncOptions& options = {})
      : rayorch::detail::RunApiOf<P>(
            rayorch::detail::make_sync_core(program.plan(), options.wire_protocol)) {}

  /// Every RPC of every run so far, in dispatch order.
  const std::vector<RpcRecord>& rpcs() const { return this->core().rpc_log(); }
};

template <class P>
SyncExecutor(const Compiled<P>&) -> SyncExecutor<P>;
template <class P>
SyncExecutor(const Compiled<P>&, const SyncOptions&) -> SyncExecutor<P>;

}  // namespace rayorch::testing
