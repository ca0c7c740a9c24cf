// Running compiled programs: the embedded local executor. Executor and its run() (batch and
// streaming forms) are the user's API; the machinery behind them is in
// rayorch/detail/executor_impl.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "rayorch/detail/executor_impl.h"
#include "rayorch/metrics.h"
#include "rayorch/module_options.h"
#include "rayorch/outcome.h"
#include "rayorch/program.h"
#include "rayorch/run_options.h"

namespace rayorch {

/// The embedded local backend: one thread per actor, a driver thread owning the semantic
/// state. The default backend.
struct LocalBackend {
  /// What self-sizing pools (Module::auto_replicas) may use at once; unused otherwise.
  ResourceBudget budget;
  /// Testing only: non-zero draws the self-sizing pools' targets at random from this seed
  /// instead of following the backlog (the schedule-independence suites).
  std::uint64_t random_resize_seed = 0;
};

/// The outputs of a run, in source order, plus its metrics.
template <class Out>
struct RunResult {
  std::vector<Output<Out>> outputs;  ///< one per source row (empty for streaming runs)
  RunMetrics metrics;
};

/// Several outputs: one vector per output Port.
template <class... O>
struct RunResult<MultiOutput<O...>> {
  std::tuple<std::vector<Output<O>>...> outputs;
  RunMetrics metrics;
};

namespace detail {

/// The typed run() surface shared by Executor and testing::SyncExecutor.
template <class Out, class Inputs>
class RunApi;

template <class Out, class... Ins>
class RunApi<Out, std::tuple<Ins...>> {
 public:
  using row_type = typename RowOutput<Out>::type;
  /// Receives (source row index, outputs of that row) as soon as the row is terminal.
  using RowCallback = std::function<void(std::size_t, row_type)>;

  /// Runs the program on finite, row-aligned source columns; outputs in source order.
  /// Throws std::invalid_argument on mismatched column lengths, ExecutionError on an
  /// unrecoverable failure (the executor stays open unless its actors broke).
  RunResult<Out> run(const std::vector<Ins>&... columns, const RunOptions& options = {}) {
    RunResult<Out> result;
    RowOutput<Out>::size(result, Typed::check_rows(columns...));
    result.metrics =
        run_erased(columns..., options, [&](std::size_t row, std::span<const ErasedOutput> e) {
          RowOutput<Out>::store(result, row, RowOutput<Out>::make(e));
        });
    return result;
  }

  /// Streaming form: delivers each root row to `on_row` as soon as it is terminal
  /// (completion order, with its row index), or with `options.ordered_stream` in source
  /// order, each row as soon as it and every earlier row are terminal. The returned outputs
  /// are empty.
  ///
  /// Callback contract, the same on every executor: `on_row` runs on the thread that called
  /// run(), between scheduling steps (no other callback runs concurrently, and a slow
  /// callback delays dispatch); the row's values are copies it may keep. An exception
  /// thrown by `on_row` aborts the run: it propagates out of run() unchanged once the RPCs
  /// in flight finished, and the executor keeps its actors for the next run.
  RunResult<Out> run(const std::vector<Ins>&... columns, const RunOptions& options,
                     const RowCallback& on_row) {
    RunResult<Out> result;
    if (!options.ordered_stream) {
      result.metrics =
          run_erased(columns..., options, [&](std::size_t row, std::span<const ErasedOutput> e) {
            on_row(row, RowOutput<Out>::make(e));
          });
      return result;
    }
    // Rows that finished ahead of an earlier one wait here, already materialised.
    std::map<std::size_t, row_type> waiting;
    std::size_t next = 0;
    result.metrics =
        run_erased(columns..., options, [&](std::size_t row, std::span<const ErasedOutput> e) {
          waiting.emplace(row, RowOutput<Out>::make(e));
          for (auto it = waiting.begin(); it != waiting.end() && it->first == next;
               it = waiting.erase(it), ++next) {
            on_row(it->first, std::move(it->second));
          }
        });
    return result;
  }

  /// Blocks until every pool has a ready actor (the executor returns before: eager start),
  /// e.g. to report a model that cannot load before anything else happens. Throws
  /// ExecutionError naming the Module, and closes the executor, when a pool has no actor
  /// that could start. Runs do not need it.
  void await_actors() { core_->await_actors(); }
  /// Stops every actor; idempotent. Later runs throw ExecutionError.
  void close() { core_->close(); }
  /// True once closed (explicitly or by an abort).
  bool closed() const { return core_->closed(); }

 protected:
  explicit RunApi(std::unique_ptr<ExecutionCore> core) : core_(std::move(core)) {}
  ExecutionCore& core() { return *core_; }
  const ExecutionCore& core() const { return *core_; }

 private:
  using Typed = TypedRun<Out, std::tuple<Ins...>>;

  // Runs the core, with the journal, the sink and dead letters when the options ask for them.
  RunMetrics run_erased(const std::vector<Ins>&... columns, const RunOptions& options,
                        const RootCallback& deliver) {
    if (options.journal.path.empty() && options.dead_letters.empty() && !options.sink.enabled()) {
      return core_->run(Typed::make_sources(columns...), options, deliver);
    }
    return Typed::run_resumable(*core_, columns..., options, deliver);
  }

  std::unique_ptr<ExecutionCore> core_;
};

template <class P>
using RunApiOf = RunApi<typename Compiled<P>::output, typename Compiled<P>::inputs>;

}  // namespace detail

/// Runs a compiled program on a backend. Starts every actor pool up front and reuses the
/// actors across runs and input batches.
///
/// Eager start (DESIGN 6.1.4): the constructor returns at once while each actor builds its UDF
/// instance on its own thread. A run dispatches to an actor as soon as it is ready (the
/// tasks of a Call without a ready actor wait in its queue) and admits input as soon as a
/// Call that reads the sources has a ready actor. An actor whose constructor throws stays out
/// of its pool for the executor's life and the pool goes on with the others
/// (RunMetrics::pools and RunObserver::on_actor_start report it); when every actor of a pool
/// failed, the run that learns it throws ExecutionError naming the Module and the first
/// constructor's error, and the executor closes. Closing waits for constructors still running.
template <class P>
class Executor : public detail::RunApiOf<P> {
 public:
  /// Starts the pools on the embedded local backend; returns without waiting for the UDF
  /// constructors (see above for their failures).
  explicit Executor(const Compiled<P>& program, const LocalBackend& backend = {})
      : detail::RunApiOf<P>(detail::make_local_core(program.plan(), backend)) {}
};

template <class P>
Executor(const Compiled<P>&, const LocalBackend&) -> Executor<P>;
template <class P>
Executor(const Compiled<P>&) -> Executor<P>;

}  // namespace rayorch
