// Observers of a run: the progress line, the Chrome trace and the JSON report are built-in
// observers of the driver's events (DESIGN 6.1.10); users and workloads add their own through
// RunOptions::observers.
//
// Threading: every callback runs on the thread that called run(), between driver steps,
// never concurrently with another callback of the same run. Callbacks should be quick: the
// driver dispatches no work while one runs.
// Exceptions: an exception thrown from on_run_start, on_rpc, on_actor_start, on_pool_resize,
// on_root or on_progress aborts the run like one from the streaming callback: the run throws
// it once the RPCs in flight are done, and the executor keeps its actors for the next run.
// One thrown from on_run_end or report_section is recorded in RunMetrics::file_errors (and
// printed on stderr); the run's outputs stand.
// Ownership: RunOptions holds observers by shared_ptr; the run keeps them alive until it
// returns. One observer object may watch several runs, one after the other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "rayorch/outcome.h"

namespace rayorch {

struct RunMetrics;

/// A run is about to admit its first input batch.
struct RunStartEvent {
  std::size_t rows = 0;           ///< source rows to compute (restored ones excluded)
  std::size_t input_batches = 0;  ///< input batches they are cut into
  /// False for a lazy source, whose rows are pulled as the run goes: `rows` and
  /// `input_batches` are 0 then and the count is known only at the end (ProgressEvent).
  bool rows_known = true;
  std::span<const std::string> calls;     ///< Call names, in plan order ("Ocr#1")
  std::span<const std::string> pools;     ///< pool (Module) names, in plan order
  std::span<const int> actors_per_pool;   ///< actors (UDF instances) per pool
  std::span<const int> call_pools;        ///< per Call: its pool's index
  std::span<const int> call_batch_sizes;  ///< per Call: its Module's batch size
  std::size_t restored = 0;               ///< roots restored from the run journal
};

/// One finished RPC (or abandoned one: status "timeout").
struct RpcEvent {
  int call = -1;   ///< index into RunStartEvent::calls / RunMetrics::calls
  int pool = -1;   ///< index into RunStartEvent::pools
  int actor = -1;  ///< the worker's index within its pool
  std::size_t input_batch = 0;
  std::size_t rows = 0;  ///< Grains in the RPC
  /// Distinct parent Entities among the Grains; computed only when some observer's
  /// wants_rpc_parents() is true (it costs a key per Grain), else 0.
  std::size_t parents = 0;
  /// The caller's rows of the roots its Grains descend from, distinct and ascending; filled
  /// only when some observer's wants_rpc_roots() is true (a walk up the lineage per Grain),
  /// else empty. Valid during the callback only.
  std::span<const std::size_t> roots{};
  double start_seconds = 0;  ///< since the run started
  double end_seconds = 0;
  std::string_view status;  ///< "ok", "failed", "lost" or "timeout"
};

/// An actor's constructor finished (eager start, DESIGN 6.1.4): the actor joined its pool, or
/// failed and stays out of it. Each actor is reported once per executor, in the run during
/// which the driver learnt of it; one that started between runs is reported at the start of
/// the next run (with a negative `run_seconds`).
struct ActorStartEvent {
  int pool = -1;           ///< index into RunStartEvent::pools
  int actor = -1;          ///< within its pool
  double seconds = 0;      ///< since the executor was made
  double run_seconds = 0;  ///< since the run started
  std::string_view error;  ///< the constructor's error; empty when the actor is ready
};

/// A self-sizing pool's target changed (its actors start, or retire once idle), or a grow
/// was refused by the resource budget (`from == to`; DESIGN 6.1.7).
struct PoolResizeEvent {
  int pool = -1;           ///< index into RunStartEvent::pools
  int from = 0;            ///< actors (started or starting) before
  int to = 0;              ///< the new target
  double run_seconds = 0;  ///< since the run started
  std::string_view reason;
};

/// A root row became terminal (delivered to the caller). Roots restored from a run journal
/// (rayorch/journal.h) are reported too, marked `restored`, right after on_run_start and
/// before any computed root, so a progress or failure observer sees every row of the run.
struct RootEvent {
  std::size_t row = 0;                 ///< the caller's source row
  Outcome outcome = Outcome::present;  ///< as counted in RunMetrics::roots_by_outcome
  double seconds = 0;                  ///< since the run started
  bool restored = false;               ///< delivered from the run journal, not computed
  /// For a computed root that is not present, from its first root output that is not: the
  /// cause, the Call that decided it ("OcrPage#2") and that Grain's Entity key ("7/3");
  /// each empty when none was recorded. Valid during the callback only.
  std::string_view cause{};
  std::string_view call{};
  std::string_view entity{};
};

/// Per-Call counters for a progress display.
struct CallProgress {
  std::string_view call;
  std::uint64_t done = 0;       ///< Grains whose reports were accepted
  std::uint64_t ready = 0;      ///< Grains waiting for a worker
  std::uint64_t in_flight = 0;  ///< Grains in running RPCs
  /// The time its ended RPCs took over its pool's actors times the run time so far: the
  /// share of the pool's time this Call kept busy (about 0..1), as the report reads it.
  double busy_share = 0;
};

/// Per-pool actor counts for a progress display (eager start, DESIGN 6.1.4).
struct PoolProgress {
  std::string_view pool;
  int actors = 0;  ///< actors the pool was made with
  int ready = 0;   ///< actors whose constructors finished
  int failed = 0;  ///< actors whose constructors threw (they stay out of the pool)
};

/// Where the run stands; sent about every 250 ms while it runs and once at its end
/// (`final`).
struct ProgressEvent {
  std::size_t roots_done = 0;      ///< delivered roots, restored ones included
  std::size_t roots_total = 0;     ///< every row of the run, restored ones included
  std::size_t roots_restored = 0;  ///< of `roots_done`, those restored from the run journal
  /// False while a lazy source has not ended: `roots_total` counts the rows pulled so far.
  bool total_known = true;
  double elapsed_seconds = 0;
  std::span<const CallProgress> calls;
  std::span<const PoolProgress> pools;  ///< plan order
  bool final = false;
};

/// A named JSON section of the report (`json` is a complete JSON value as text).
struct ReportSection {
  std::string name;
  std::string json;
};

/// The run ended: normally (`aborted` false) or with the error that aborted it.
struct RunEndEvent {
  const RunMetrics& metrics;
  bool aborted = false;
  std::string_view error;  ///< the abort's message; empty otherwise
  std::size_t roots_delivered = 0;
  /// Sections every observer contributed (report_section), for a report writer.
  std::span<const ReportSection> sections;
};

/// Receives a run's events. Every callback has an empty default.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void on_run_start(const RunStartEvent&) {}
  virtual void on_rpc(const RpcEvent&) {}
  virtual void on_actor_start(const ActorStartEvent&) {}
  virtual void on_pool_resize(const PoolResizeEvent&) {}
  virtual void on_root(const RootEvent&) {}
  virtual void on_progress(const ProgressEvent&) {}
  virtual void on_run_end(const RunEndEvent&) {}
  /// A section this observer adds to the JSON report (RunOptions::report_path), asked once
  /// at the end of the run, before on_run_end; an empty name adds none.
  virtual ReportSection report_section() { return {}; }
  /// Whether on_rpc needs RpcEvent::parents.
  virtual bool wants_rpc_parents() const { return false; }
  /// Whether on_rpc needs RpcEvent::roots.
  virtual bool wants_rpc_roots() const { return false; }
};

}  // namespace rayorch
