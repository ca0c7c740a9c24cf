// Metrics reported by executors (the options of a run are in rayorch/run_options.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rayorch {

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
  /// The Grains of each RPC, in the order the RPCs ended.
  std::vector<std::uint32_t> rpc_sizes;
  double busy_seconds = 0.0;          ///< time actors spent inside the UDF
  std::uint64_t actors_replaced = 0;  ///< actors of the Call's pool replaced during the run
};

/// Counters of one input batch.
struct InputBatchMetrics {
  std::size_t index = 0;
  std::size_t first_row = 0;
  std::size_t rows = 0;
  std::uint64_t grains = 0;
  std::uint64_t rpcs = 0;
  double admitted_seconds = 0.0;      ///< since the run started
  double completed_seconds = 0.0;     ///< since the run started
  std::uint64_t entities = 0;         ///< Entities of every Domain (the rows and their children)
  std::uint64_t items = 0;            ///< Items: an Entity's value at one Port
  std::uint64_t expansions = 0;       ///< one per expand and parent Entity
  std::uint64_t released_values = 0;  ///< values freed once nothing needed them
};

/// How many children one expansion (an `F::expand` of a Call's list output) made per parent.
struct ExpandMetrics {
  std::string call;            ///< the Call whose list is expanded, e.g. "Split#0"
  int port = -1;               ///< the expanded list's Port (p3 in errors and traces)
  std::uint64_t parents = 0;   ///< parents whose list was expanded (not dropped or failed)
  std::uint64_t children = 0;  ///< the children they made
  std::map<std::uint32_t, std::uint64_t> fan_out_histogram;  ///< children -> parents
};

/// When one actor's constructor finished (eager start, DESIGN 6.1.4).
struct ActorStartMetrics {
  int actor = -1;                ///< its index within its pool
  double started_seconds = 0.0;  ///< since the executor was made
  /// Empty when the actor became ready; else the constructor's error: the actor stays out of
  /// its pool for the executor's life.
  std::string error;
};

/// A self-sizing pool's target changed, or a grow was refused by the budget (`from == to`)
/// (DESIGN 6.1.7).
struct PoolResizeMetrics {
  double seconds = 0.0;  ///< since the run started
  int from = 0;          ///< actors (started or starting) before
  int to = 0;            ///< the new target
  std::string reason;
};

/// The actors of one pool (Module), as far as their starts are known at the end of a run.
struct PoolMetrics {
  std::string pool;  ///< the Module's name, as in explain()
  int actors = 0;    ///< actors it was made with (its replicas)
  /// Actors whose constructors finished, in the order they did (since the executor was made,
  /// so every run of one executor lists the same starts, plus those since); an actor still
  /// starting is missing.
  std::vector<ActorStartMetrics> started;
  /// Self-sizing pools: every decision of this run, in order (empty for a fixed pool).
  std::vector<PoolResizeMetrics> resizes;
  /// Self-sizing pools: (seconds since the run started, target actors), from the run's
  /// start and at each change.
  std::vector<std::pair<double, int>> actors_over_time;
};

/// A cluster node the run lost (a Ray node that went away with actors or values of the
/// run), as the backend detected it.
struct NodeLossMetrics {
  std::string node;     ///< the node's id
  std::string address;  ///< its node manager's address, "ip:port"
  /// When the backend detected the loss, in seconds since the run started (0 when it was
  /// detected before, between two runs of one executor).
  double detected_seconds = 0.0;
  std::string cause;  ///< what revealed it: the error of the lost actor or value
};

/// Metrics of one run.
struct RunMetrics {
  double elapsed_seconds = 0.0;
  std::vector<CallMetrics> calls;
  /// Per pool (plan order): when each actor became ready, or why it could not start.
  std::vector<PoolMetrics> pools;
  std::vector<InputBatchMetrics> input_batches;
  std::size_t peak_active_input_batches = 0;
  /// Per expansion (plan order), its fan-out over the input batches that completed.
  std::vector<ExpandMetrics> expands;
  /// Seconds since the run started at which each root row became terminal (source order).
  /// Empty for a lazy source (SourceData::feed, Python iterables without a length): a run
  /// of a stream keeps nothing per root, so its memory stays flat over any number of rows;
  /// its input_batches still say when each batch completed.
  std::vector<double> root_completed_seconds;
  std::uint64_t stale_reports_rejected = 0;
  std::uint64_t actors_replaced = 0;
  /// Values lost with their storage (a Ray node) and re-materialised from lineage, the
  /// Grains re-executed for it, and the seconds those re-executions ran (DESIGN 5.13).
  std::uint64_t values_rebuilt = 0;
  std::uint64_t grains_reexecuted = 0;
  double rebuild_seconds = 0.0;
  /// The nodes lost during the run, in the order they were detected (Ray backend).
  std::vector<NodeLossMetrics> node_losses;
  /// Root rows by outcome: "present" when every output is present, else the outcome of the
  /// first output that is not ("dropped", "failed", "suppressed").
  std::map<std::string, std::uint64_t> roots_by_outcome;
  /// Roots delivered from the run journal instead of being computed (included in
  /// roots_by_outcome; their root_completed_seconds is 0).
  std::uint64_t roots_restored = 0;
  /// Bytes of a torn or corrupt journal tail cut off when the journal was opened.
  std::uint64_t journal_discarded_bytes = 0;
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
