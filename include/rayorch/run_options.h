// The options of one run (Executor::run, testing::SyncExecutor::run).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rayorch/journal.h"
#include "rayorch/module_options.h"
#include "rayorch/observer.h"
#include "rayorch/sink.h"

namespace rayorch {

/// Order in which a READY queue is served. LIFO exists for ablation experiments only.
enum class QueueOrder : std::uint8_t { fifo, lifo };

/// The live page: an HTTP endpoint of the driver that serves the run's report page
/// (rayorch/report_page.h) as it runs, redrawn from the run's events about every second,
/// for as long as the run lasts (docs/REPORT.md). It only reads what the observers are told:
/// no request changes the run.
struct LiveOptions {
  /// Off unless set.
  bool enabled = false;
  /// The address to listen on (an IPv4 address or "localhost"). Any address other than a
  /// loopback one (127.0.0.0/8) requires the token of every request.
  std::string host = "127.0.0.1";
  /// 0: the system picks a free port; the URL printed at the start names it.
  int port = 0;
  /// Required of every request (`?token=...` or an `Authorization: token ...` header) when
  /// non-empty or when `host` is not a loopback address; made at random when empty then.
  std::string token{};
  /// Called once with the page's URL (the token included) when the endpoint listens, before
  /// the first input is admitted. Unset: the URL is printed on stderr.
  std::function<void(const std::string& url)> on_listen{};
};

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
  /// Progress on stderr: on a terminal, one line redrawn in place (roots done, rate, time
  /// left, each Call's Grains done, queued and in flight, the bottleneck Call marked '*',
  /// abbreviated to the terminal's width); otherwise (a log) a plain line per
  /// `progress_log_interval` of run time, and a last one when the run logged one.
  bool progress = true;
  /// How often a log gets a progress line (stderr not a terminal); 0: never.
  std::chrono::milliseconds progress_log_interval{30000};
  /// A crash record: when a Module on threads (in this process) crashes it with a fatal
  /// signal (a segfault, an abort in native code), stderr names the Call, its Module and the
  /// Entity keys of the Grains it ran, and says that Isolation::process would have contained
  /// it, before the signal takes its course (docs/ISOLATION.md). Costs copying those keys as
  /// numbers once per RPC of such a Module.
  bool crash_record = true;
  /// When non-empty, a Chrome-trace JSON timeline of every RPC is written here (atomically).
  /// The directory must exist and be writable: run() checks before admitting any input and
  /// throws std::invalid_argument otherwise. An aborted run still writes it, marked aborted.
  std::string trace_path{};
  /// When non-empty, a JSON metrics report is written here (atomically); same rules. Each
  /// observer's report_section() becomes a top-level key of it.
  std::string report_path{};
  /// The live page (LiveOptions); run() throws std::invalid_argument before anything runs
  /// when its address cannot be listened on.
  LiveOptions live{};
  /// More observers of the run's events (rayorch/observer.h), called before the built-in
  /// progress line, trace and report.
  std::vector<std::shared_ptr<RunObserver>> observers{};
  /// A run journal for resuming an interrupted run (rayorch/journal.h); off when its path is
  /// empty.
  JournalOptions journal{};
  /// Writes the present roots into committed parts of a directory (rayorch/sink.h), each
  /// exactly once with a journal; off when its directory is empty. run() throws
  /// std::invalid_argument before anything runs when the directory cannot be created or
  /// written, or the format is missing.
  SinkOptions sink{};
  /// Error budget: when more than this many roots of the run are failed or suppressed
  /// (dropped roots are deliberate and do not count), nothing more is admitted or
  /// dispatched, and run() throws ExecutionError naming the count and the first causes once
  /// the RPCs in flight finished (the executor stays open; the rows delivered before, to the
  /// streaming callback or a journal, are the partial outputs). Unset: no limit.
  std::optional<std::size_t> max_failed_roots{};
  /// Error budget as a fraction of the roots delivered so far (0..1), checked once at least
  /// `min_roots_for_failed_fraction` roots are delivered; same effect. >= 1: no limit.
  double max_failed_fraction = 1.0;
  std::size_t min_roots_for_failed_fraction = 20;
  /// When non-empty, every root that is not present (failed, suppressed or dropped) is
  /// written here as one JSON line: key (the journal key: JournalOptions::key, else a
  /// digest of the source values when every source type has a Codec, else the row index),
  /// row, outcome (the root output's: failed, suppressed or dropped), failed (the row's
  /// verdict: true unless dropped on purpose; what failure counts and exit codes follow),
  /// output (the first output Port not present), cause, call, entity (the deciding Grain's
  /// Entity key), attempts, restored. The file is replaced at the start of
  /// the run; run() throws std::invalid_argument before anything runs when it cannot be
  /// created.
  std::string dead_letters{};
  /// Extra string fields of a row's dead letter (by row index), e.g. a workload's document
  /// name and input path; a name of a standard field above is overwritten by that field.
  std::function<std::vector<std::pair<std::string, std::string>>(std::size_t row)>
      dead_letter_fields{};
};

}  // namespace rayorch
