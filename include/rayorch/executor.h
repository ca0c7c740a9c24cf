// Running compiled programs: the embedded local executor.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "rayorch/detail/erased.h"
#include "rayorch/errors.h"
#include "rayorch/metrics.h"
#include "rayorch/run_options.h"
#include "rayorch/outcome.h"
#include "rayorch/program.h"

namespace rayorch {

/// The embedded local backend: one thread per actor, a driver thread owning the semantic
/// state. The default backend.
struct LocalBackend {};

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

/// One root row's output Item as handed over by an executor core.
struct ErasedOutput {
  Outcome outcome = Outcome::dropped;
  const std::string* cause = nullptr;
  const void* value = nullptr;
  std::optional<IssueOrigin> origin{};
};

/// Receives each root row as soon as it is terminal; the values are valid during the call.
using RootSink = std::function<void(std::size_t row, std::span<const ErasedOutput>)>;

/// The source columns of a run.
struct SourceData {
  std::vector<BlockRef> blocks;
  std::vector<std::vector<const void*>> values;  ///< [column][row]
  std::size_t rows = 0;
};

/// The untyped engine behind an executor (src/execution).
class ExecutionCore {
 public:
  virtual ~ExecutionCore() = default;
  virtual RunMetrics run(SourceData sources, const RunOptions& options, const RootSink& sink) = 0;
  virtual void close() = 0;
  virtual bool closed() const = 0;
  virtual const std::vector<RpcRecord>& rpc_log() const = 0;
};

/// Creates the local backend (builds every pool; throws ExecutionError on a constructor
/// failure after cleaning up).
std::unique_ptr<ExecutionCore> make_local_core(std::shared_ptr<const RuntimePlan> plan,
                                               const LocalBackend& backend);
/// Creates the deterministic single-thread core used by testing::SyncExecutor; with `wire`,
/// every protocol message is round-tripped through bytes.
std::unique_ptr<ExecutionCore> make_sync_core(std::shared_ptr<const RuntimePlan> plan,
                                              bool wire = false);

template <class T>
Output<T> to_output(const ErasedOutput& e) {
  if (e.outcome == Outcome::present) return Output<T>(*static_cast<const T*>(e.value));
  return Output<T>(OutputIssue{e.outcome, e.cause ? *e.cause : std::string(), e.origin});
}

template <class Out>
struct RowOutput {
  using type = Output<Out>;
  static type make(std::span<const ErasedOutput> e) { return to_output<Out>(e[0]); }
  static void store(RunResult<Out>& r, std::size_t row, type&& v) { r.outputs[row] = std::move(v); }
  static void size(RunResult<Out>& r, std::size_t rows) {
    r.outputs.assign(rows, Output<Out>(OutputIssue{Outcome::dropped, "not materialised"}));
  }
};
template <class... O>
struct RowOutput<MultiOutput<O...>> {
  using type = std::tuple<Output<O>...>;
  static type make(std::span<const ErasedOutput> e) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return type{to_output<O>(e[I])...};
    }
    (std::index_sequence_for<O...>{});
  }
  static void store(RunResult<MultiOutput<O...>>& r, std::size_t row, type&& v) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((std::get<I>(r.outputs)[row] = std::move(std::get<I>(v))), ...);
    }
    (std::index_sequence_for<O...>{});
  }
  static void size(RunResult<MultiOutput<O...>>& r, std::size_t rows) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((std::get<I>(r.outputs).assign(
           rows, Output<O>(OutputIssue{Outcome::dropped, "not materialised"}))),
       ...);
    }
    (std::index_sequence_for<O...>{});
  }
};

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
  /// unrecoverable failure (the executor is then closed).
  RunResult<Out> run(const std::vector<Ins>&... columns, const RunOptions& options = {}) {
    RunResult<Out> result;
    SourceData sources = make_sources(columns...);
    RowOutput<Out>::size(result, sources.rows);
    result.metrics = core_->run(std::move(sources), options,
                                [&](std::size_t row, std::span<const ErasedOutput> e) {
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
  /// thrown by `on_row` aborts the run: it propagates out of run() unchanged and the
  /// executor is closed (its actors may be in the middle of other rows).
  RunResult<Out> run(const std::vector<Ins>&... columns, const RunOptions& options,
                     const RowCallback& on_row) {
    RunResult<Out> result;
    if (!options.ordered_stream) {
      result.metrics = core_->run(make_sources(columns...), options,
                                  [&](std::size_t row, std::span<const ErasedOutput> e) {
                                    on_row(row, RowOutput<Out>::make(e));
                                  });
      return result;
    }
    // Rows that finished ahead of an earlier one wait here, already materialised.
    std::map<std::size_t, row_type> waiting;
    std::size_t next = 0;
    result.metrics = core_->run(
        make_sources(columns...), options, [&](std::size_t row, std::span<const ErasedOutput> e) {
          waiting.emplace(row, RowOutput<Out>::make(e));
          for (auto it = waiting.begin(); it != waiting.end() && it->first == next;
               it = waiting.erase(it), ++next) {
            on_row(it->first, std::move(it->second));
          }
        });
    return result;
  }

  /// Stops every actor; idempotent. Later runs throw ExecutionError.
  void close() { core_->close(); }
  /// True once closed (explicitly or by an abort).
  bool closed() const { return core_->closed(); }

 protected:
  explicit RunApi(std::unique_ptr<ExecutionCore> core) : core_(std::move(core)) {}
  ExecutionCore& core() { return *core_; }
  const ExecutionCore& core() const { return *core_; }

 private:
  static SourceData make_sources(const std::vector<Ins>&... columns) {
    SourceData s;
    std::size_t lengths[] = {columns.size()...};
    s.rows = lengths[0];
    for (std::size_t i = 1; i < sizeof...(Ins); ++i) {
      if (lengths[i] != s.rows) {
        throw std::invalid_argument("source columns are not row-aligned: column 0 has " +
                                    std::to_string(s.rows) + " rows but column " +
                                    std::to_string(i) + " has " + std::to_string(lengths[i]) +
                                    "; pass columns of equal length");
      }
    }
    (add_column(s, columns), ...);
    return s;
  }
  template <class T>
  static void add_column(SourceData& s, const std::vector<T>& column) {
    std::vector<const void*> pointers;
    std::vector<RowKind> kinds;
    std::vector<std::string> messages;
    s.blocks.push_back(make_block(std::vector<T>(column), pointers, kinds, messages));
    s.values.push_back(std::move(pointers));
  }

  std::unique_ptr<ExecutionCore> core_;
};

template <class P>
using RunApiOf = RunApi<typename Compiled<P>::output, typename Compiled<P>::inputs>;

}  // namespace detail

/// Runs a compiled program on a backend. Creates every actor pool up front and waits until
/// every UDF constructor has finished; reuses the actors across runs and input batches.
template <class P>
class Executor : public detail::RunApiOf<P> {
 public:
  /// Builds the pools on the embedded local backend. Throws ExecutionError naming the Module
  /// when a UDF constructor fails (the partial pools are cleaned up first).
  explicit Executor(const Compiled<P>& program, const LocalBackend& backend = {})
      : detail::RunApiOf<P>(detail::make_local_core(program.plan(), backend)) {}
};

template <class P>
Executor(const Compiled<P>&, const LocalBackend&) -> Executor<P>;
template <class P>
Executor(const Compiled<P>&) -> Executor<P>;

}  // namespace rayorch
