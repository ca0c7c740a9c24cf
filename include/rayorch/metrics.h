// Run options and metrics reported by executors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
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

/// Per-Call counters of one run.
struct CallMetrics {
  std::string call;    ///< e.g. "OcrPage#2"
  std::string udf;     ///< the UDF type name
  int actors = 0;      ///< actors in the Call's pool
  int batch_size = 1;  ///< the Module's batch_size
  /// Mean Grains per RPC over batch_size (1.0: every RPC full); 0 without RPCs.
  double mean_batch_fill = 0.0;
  std::uint64_t rpcs = 0;                   ///< physical calls (including failed attempts)
  std::uint64_t grain_dispatches = 0;       ///< Grains sent in RPCs (counting replays)
  std::uint64_t requeues = 0;               ///< Grains put back for a retry or replay
  std::uint64_t failed_rpcs = 0;            ///< RPCs that threw or lost their actor
  std::uint64_t suppressed_by_barrier = 0;  ///< Grains sealed by a GroupFailure barrier
  std::map<std::size_t, std::uint64_t> batch_size_histogram;  ///< RPC size -> count
  double busy_seconds = 0.0;                                  ///< time actors spent inside the UDF
};

/// Counters of one input batch.
struct InputBatchMetrics {
  std::size_t index = 0;
  std::size_t first_row = 0;
  std::size_t rows = 0;
  std::uint64_t grains = 0;
  std::uint64_t rpcs = 0;
  double admitted_seconds = 0.0;   ///< since the run started
  double completed_seconds = 0.0;  ///< since the run started
};

/// Metrics of one run.
struct RunMetrics {
  double elapsed_seconds = 0.0;
  std::vector<CallMetrics> calls;
  std::vector<InputBatchMetrics> input_batches;
  std::size_t peak_active_input_batches = 0;
  /// Seconds since the run started at which each root row became terminal (source order).
  std::vector<double> root_completed_seconds;
  std::uint64_t stale_reports_rejected = 0;
  std::uint64_t actors_replaced = 0;
  /// Root rows by outcome: "present" when every output is present, else the outcome of the
  /// first output that is not ("dropped", "failed", "suppressed").
  std::map<std::string, std::uint64_t> roots_by_outcome;
  /// Trace or report files that could not be written at the end of the run, and other
  /// observers' end-of-run failures (the run itself succeeded and the executor stays open);
  /// each names the path or observer and the reason.
  std::vector<std::string> file_errors;
};

/// One RPC as recorded by testing::SyncExecutor.
struct RpcRecord {
  std::string call;  ///< e.g. "Ocr#1"
  std::size_t input_batch = 0;
  std::vector<std::string> grains;  ///< Entity keys, e.g. "7/3"
  std::vector<std::uint32_t> generations;
  bool failed = false;  ///< the UDF threw or the actor was lost

  /// "Ocr#1 [0/0 0/1] g0" (generations shown once when uniform).
  std::string to_string() const;
};

}  // namespace rayorch
