// The options of one run (Executor::run, testing::SyncExecutor::run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rayorch/module_options.h"
#include "rayorch/observer.h"

namespace rayorch {

/// Order in which a READY queue is served. LIFO exists for ablation experiments only.
enum class QueueOrder : std::uint8_t { fifo, lifo };

/// Options of one run.
struct RunOptions {
  /// Source rows per input batch; 0 puts every row in one batch (default).
  std::size_t input_batch_size = 0;
  /// Input batches admitted at once (>= 1; default 1).
  std::size_t max_active_input_batches = 1;
  /// READY queue order (FIFO default; LIFO for experiments).
  QueueOrder queue_order = QueueOrder::fifo;
  /// Overrides every Module's reservation policy when set.
  std::optional<Reservation> reservation{};
  /// Backpressure between stages: a Call is not dispatched while a Call that consumes its
  /// outputs has at least `backpressure` x batch_size x replicas READY Grains waiting, so a
  /// fast producer (a decoder) cannot fill memory with values its consumer has not reached.
  /// The consumer always has dispatchable work then, so this never stalls a run. 0: off.
  std::size_t backpressure = 4;
  /// Streaming runs deliver rows in source order, each as soon as it and every earlier row
  /// are terminal (for writers that append to one ordered file). Default: completion order.
  bool ordered_stream = false;
  /// Progress on stderr, shown only when stderr is a terminal.
  bool progress = true;
  /// When non-empty, a Chrome-trace JSON timeline of every RPC is written here (atomically).
  /// The directory must exist and be writable: run() checks before admitting any input and
  /// throws std::invalid_argument otherwise. An aborted run still writes it, marked aborted.
  std::string trace_path{};
  /// When non-empty, a JSON metrics report is written here (atomically); same rules. Each
  /// observer's report_section() becomes a top-level key of it.
  std::string report_path{};
  /// More observers of the run's events (rayorch/observer.h), called before the built-in
  /// progress line, trace and report.
  std::vector<std::shared_ptr<RunObserver>> observers{};
};

}  // namespace rayorch
