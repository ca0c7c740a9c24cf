// The internals behind rayorch/executor.h: the untyped executor core and the typed glue
// between a run's source columns and outputs and that core (columns to SourceData, erased
// outputs to Output<T>, journal keys and Codec bytes). Not part of the user's API.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "rayorch/codec.h"
#include "rayorch/detail/erased.h"
#include "rayorch/detail/erased_output.h"
#include "rayorch/detail/journal.h"
#include "rayorch/errors.h"
#include "rayorch/metrics.h"
#include "rayorch/outcome.h"
#include "rayorch/program.h"
#include "rayorch/run_options.h"

namespace rayorch {

struct LocalBackend;
template <class Out>
struct RunResult;

namespace detail {

/// Receives each root row as soon as it is terminal; the values are valid during the call.
using RootCallback = std::function<void(std::size_t row, std::span<const ErasedOutput>)>;

/// Rows pulled from a lazy source (SourceFeed::next).
struct SourceChunk {
  std::vector<BlockRef> blocks;                  ///< one per column, owning the chunk's values
  std::vector<std::vector<const void*>> values;  ///< [column][row], the rows to run
  std::size_t rows = 0;                          ///< rows to run: at most as many as asked
  /// The source has no more rows: no further next(). A chunk may hold fewer rows than asked
  /// without ending (a run journal restored the others).
  bool ended = false;
  /// One journal key per row, when the feed was made to compute them (run_journaled).
  std::vector<std::string> keys{};
  /// The caller's row of each row to run; empty: the rows follow on from the previous
  /// chunk's (the caller's rows are the run's rows).
  std::vector<std::size_t> caller_rows{};
  /// Rows a run journal restores instead of running them: (the caller's row, its outcome),
  /// numbered on from SourceData::restored and the previous chunks' (deliver_restored).
  std::vector<std::pair<std::size_t, Outcome>> restored{};
};

/// A lazy source: its rows are pulled in chunks as input-batch admission needs them, so the
/// rows held are those of the active input batches; the row count is known only once it
/// ended. Called by InputBatches (src/execution/run) on the driver thread, the thread that
/// called run(), once per input batch it admits, never after a chunk that ended the source.
/// next() may throw: the run then aborts with that exception once the RPCs in flight
/// finished (the executor stays usable), as for an exception from the row callback.
class SourceFeed {
 public:
  virtual ~SourceFeed() = default;
  /// The next `rows` (>= 1) rows of every column: all of them unless the source ends. A
  /// chunk without a row to run must restore one or end the source.
  virtual SourceChunk next(std::size_t rows) = 0;
};

/// The input batch size of a run over a lazy source with RunOptions::input_batch_size 0
/// (one batch of every row would pull the whole source first).
inline constexpr std::size_t kLazyInputBatchSize = 1024;

/// The source columns of a run.
struct SourceData {
  std::vector<BlockRef> blocks;
  std::vector<std::vector<const void*>> values;  ///< [column][row]
  std::size_t rows = 0;
  /// The caller's row index of each source row when the run covers a subset of the caller's
  /// rows (a resumed journal); empty: the identity. Observers and error messages name the
  /// caller's rows.
  std::vector<std::size_t> original_rows{};
  /// Roots restored from a run journal instead of being run (rayorch/journal.h): (the
  /// caller's row, its outcome). After on_run_start and before any computed root, the run
  /// calls deliver_restored(i) for each (it hands the i-th to the caller) and reports it to
  /// the observers' on_root with RootEvent::restored; its metrics (roots_restored,
  /// roots_by_outcome) and progress count them.
  std::vector<std::pair<std::size_t, Outcome>> restored{};
  std::function<void(std::size_t)> deliver_restored{};
  std::uint64_t journal_discarded_bytes = 0;
  /// A lazy source: when set, `blocks`, `values`, `rows` and `original_rows` are unused and
  /// the rows come from the feed, chunk by chunk, as input batches are admitted.
  std::shared_ptr<SourceFeed> feed{};
};

/// The untyped engine behind an executor (src/execution).
class ExecutionCore {
 public:
  virtual ~ExecutionCore() = default;
  virtual RunMetrics run(SourceData sources, const RunOptions& options,
                         const RootCallback& sink) = 0;
  /// Blocks until every pool has a ready actor (eager start, DESIGN 6.1.4); throws
  /// ExecutionError, closing the executor, when a pool has none that could start.
  virtual void await_actors() = 0;
  virtual void close() = 0;
  virtual bool closed() const = 0;
  virtual const std::vector<RpcRecord>& rpc_log() const = 0;
  /// A digest of what the results depend on (Calls, UDF types, static arguments, Port types
  /// and wiring), for the run journal.
  virtual std::uint64_t plan_fingerprint() const = 0;
};

/// Creates the local backend: starts every pool and returns without waiting for the UDF
/// constructors (eager start, DESIGN 6.1.4).
std::unique_ptr<ExecutionCore> make_local_core(std::shared_ptr<const RuntimePlan> plan,
                                               const LocalBackend& backend);
/// Creates the deterministic single-thread core used by testing::SyncExecutor; with `wire`,
/// every protocol message is round-tripped through bytes.
std::unique_ptr<ExecutionCore> make_sync_core(std::shared_ptr<const RuntimePlan> plan,
                                              bool wire = false);

/// How run_journaled records and restores a run's root outputs.
struct OutputCodec {
  std::size_t outputs = 0;  ///< output Ports per root
  bool available = false;   ///< every output can be encoded (a journal needs it)
  /// Appends the encoded value of output `k` (present) to `out`.
  std::function<void(std::size_t k, const void* value, std::string& out)> encode{};
  /// Decodes a recorded root and hands it to `sink` as row `row`.
  std::function<void(std::size_t row, const JournalEntry& entry, const RootCallback& sink)>
      restore{};
};

/// Runs `core` with RunOptions::journal and RunOptions::dead_letters (rayorch/journal.h):
/// `keys` holds one journal key per source row. Restores the rows recorded finished, runs
/// the others as a subset of `sources` (observers and errors still name the caller's rows),
/// records and dead-letters each root after `sink` received it. Over a lazy source
/// (SourceData::feed) `keys` is unused: the feed gives each chunk's keys (SourceChunk::keys)
/// and a recorded row is restored as it is pulled (execution/journal/journaled_feed.h). Used
/// by the typed run() and the Python package. Implemented in
/// src/execution/journal/run_journaled.cc.
RunMetrics run_journaled(ExecutionCore& core, SourceData sources,
                         const std::vector<std::string>& keys, const RunOptions& options,
                         const RootCallback& sink, const OutputCodec& codec);

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

/// The value types of a run's outputs, as a tuple.
template <class Out>
struct OutTypes {
  using type = std::tuple<Out>;
};
template <class... O>
struct OutTypes<MultiOutput<O...>> {
  using type = std::tuple<O...>;
};
template <class Tuple>
struct AllHaveCodec;
template <class... T>
struct AllHaveCodec<std::tuple<T...>> : std::bool_constant<(has_codec<T> && ...)> {};

/// The typed steps of a run of a program with outputs `Out` on source columns `Inputs`
/// (a std::tuple of their value types), shared by every RunApi.
template <class Out, class Inputs>
struct TypedRun;

template <class Out, class... Ins>
struct TypedRun<Out, std::tuple<Ins...>> {
  using out_tuple = typename OutTypes<Out>::type;
  static constexpr std::size_t kOutputs = std::tuple_size_v<out_tuple>;

  static std::size_t check_rows(const std::vector<Ins>&... columns) {
    const std::size_t lengths[] = {columns.size()...};
    for (std::size_t i = 1; i < sizeof...(Ins); ++i) {
      if (lengths[i] != lengths[0]) {
        throw std::invalid_argument("source columns are not row-aligned: column 0 has " +
                                    std::to_string(lengths[0]) + " rows but column " +
                                    std::to_string(i) + " has " + std::to_string(lengths[i]) +
                                    "; pass columns of equal length");
      }
    }
    return lengths[0];
  }

  static SourceData make_sources(const std::vector<Ins>&... columns) {
    SourceData s;
    s.rows = check_rows(columns...);
    (add_column(s, columns), ...);
    return s;
  }

  static std::vector<std::string> row_keys(const std::vector<Ins>&... columns,
                                           const RunOptions& options, std::size_t rows,
                                           bool required) {
    std::vector<std::string> keys;
    keys.reserve(rows);
    if (options.journal.key) {
      for (std::size_t r = 0; r < rows; ++r) keys.push_back(options.journal.key(r));
    } else if constexpr ((has_codec<Ins> && ...)) {
      std::string bytes;
      for (std::size_t r = 0; r < rows; ++r) {
        bytes.clear();
        (Codec<Ins>::encode(columns[r], bytes), ...);
        keys.push_back(hex64(fnv1a64(bytes)));
      }
    } else {
      if (required) {
        throw std::invalid_argument(
            "RunOptions.journal needs a stable key per source row: set journal.key, or give "
            "every source type a rayorch::Codec (rayorch/codec.h) so rows are keyed by a "
            "digest of their values");
      }
      for (std::size_t r = 0; r < rows; ++r) keys.push_back(std::to_string(r));
    }
    return keys;
  }

  template <std::size_t I>
  static ErasedOutput restore_port(const JournalPort& p,
                                   std::optional<std::tuple_element_t<I, out_tuple>>& slot) {
    if (p.outcome != Outcome::present) return ErasedOutput{p.outcome, &p.cause, nullptr, p.origin};
    if constexpr (has_codec<std::tuple_element_t<I, out_tuple>>) {
      slot.emplace(decode_value<std::tuple_element_t<I, out_tuple>>(p.value));
    }
    return ErasedOutput{Outcome::present, nullptr, &*slot, std::nullopt};
  }

  static void deliver_restored(std::size_t row, const JournalEntry& entry,
                               const RootCallback& sink) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      std::tuple<std::optional<std::tuple_element_t<I, out_tuple>>...> values;
      std::array<ErasedOutput, kOutputs> erased;
      try {
        ((erased[I] = restore_port<I>(entry.ports[I], std::get<I>(values))), ...);
      } catch (const DecodeError& e) {
        throw std::invalid_argument("RunOptions.journal: the recorded output of source row " +
                                    std::to_string(row) + " cannot be decoded (" + e.what() +
                                    "); did an output type's Codec change? Use a new journal path");
      }
      sink(row, erased);
    }
    (std::make_index_sequence<kOutputs>{});
  }

  // The Codec bytes of output `k`.
  static void encode_output(std::size_t k, const void* value, std::string& out) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((k == I ? Codec<std::tuple_element_t<I, out_tuple>>::encode(
                     *static_cast<const std::tuple_element_t<I, out_tuple>*>(value), out)
               : void()),
       ...);
    }
    (std::make_index_sequence<kOutputs>{});
  }

  static RunMetrics run_resumable(ExecutionCore& core, const std::vector<Ins>&... columns,
                                  const RunOptions& options, const RootCallback& sink) {
    const std::size_t rows = check_rows(columns...);
    const bool journaled = !options.journal.path.empty();
    OutputCodec codec;
    codec.outputs = kOutputs;
    if constexpr (AllHaveCodec<out_tuple>::value) {
      codec.available = true;
      codec.encode = &encode_output;
      codec.restore = &deliver_restored;
    } else if (journaled) {
      throw std::invalid_argument(
          "RunOptions.journal records root outputs and so needs a rayorch::Codec for every "
          "output type (rayorch/codec.h); specialise rayorch::Codec for it");
    }
    return run_journaled(core, make_sources(columns...),
                         row_keys(columns..., options, rows, journaled), options, sink, codec);
  }
  template <class T>
  static void add_column(SourceData& s, const std::vector<T>& column) {
    std::vector<const void*> pointers;
    std::vector<RowKind> kinds;
    std::vector<std::string> messages;
    s.blocks.push_back(make_block(std::vector<T>(column), pointers, kinds, messages));
    s.values.push_back(std::move(pointers));
  }
};

}  // namespace detail
}  // namespace rayorch
