// The run wrapper of the journal, the sink and dead letters: restores the rows a journal
// recorded finished, runs the others, and hands each root to a RootRecorder. See run_journaled in
// rayorch/executor.h and rayorch/journal.h.
#include <array>
#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "rayorch/executor.h"

#include "execution/journal/dead_letters.h"
#include "execution/journal/journaled_feed.h"
#include "execution/journal/root_recorder.h"
#include "execution/journal/run_journal.h"
#include "execution/sink/part_committer.h"

namespace rayorch::detail {

namespace {

// The metrics name the caller's rows: `run_rows` maps the rows run to them.
void to_caller_rows(RunMetrics& m, std::size_t rows, const std::vector<std::size_t>& run_rows) {
  std::vector<double> seconds(rows, 0.0);
  for (std::size_t i = 0; i < run_rows.size() && i < m.root_completed_seconds.size(); ++i) {
    seconds[run_rows[i]] = m.root_completed_seconds[i];
  }
  m.root_completed_seconds = std::move(seconds);
}

// The inputs digest a lazy run writes in the journal's header: its rows are not known before
// it starts, so it cannot digest them, and uses a journal of its pipeline whatever inputs it
// was written for (as JournalOptions::allow_other_inputs).
constexpr std::string_view kLazyInputs = "lazy source";

// run_journaled over a lazy source: each row is keyed as it is pulled (JournaledFeed).
RunMetrics run_journaled_lazy(ExecutionCore& core, SourceData sources, const RunOptions& options,
                              const RootCallback& deliver, const OutputCodec& codec) {
  std::optional<RunJournal> journal;
  if (!options.journal.path.empty()) {
    JournalOptions lazy = options.journal;
    lazy.allow_other_inputs = true;
    journal.emplace(lazy, core.plan_fingerprint(), fnv1a64(kLazyInputs));
  }
  const std::unique_ptr<PartCommitter> sink = open_sink(options, journal ? &*journal : nullptr);
  std::optional<DeadLetterFile> dead;
  if (!options.dead_letters.empty()) dead.emplace(options.dead_letters);
  RootRecorder recorder{
      options, codec, deliver, journal ? &*journal : nullptr, sink.get(), dead ? &*dead : nullptr};
  auto feed = std::make_shared<JournaledFeed>(
      std::move(sources.feed), journal ? &*journal : nullptr, options, codec.outputs);
  sources.feed = feed;
  sources.deliver_restored = [&](std::size_t i) {
    const JournaledFeed::Restored& r = feed->restored(i);
    recorder.restored(r.row, r.key, *r.entry);
  };
  sources.journal_discarded_bytes = journal ? journal->discarded_bytes() : 0;
  const RootCallback wrapped = [&](std::size_t row, std::span<const ErasedOutput> e) {
    JournaledFeed::Pending p = feed->take(row);
    recorder.computed(p.caller, p.key, e);
  };
  // A lazy source's run keeps no completion time per root (RunMetrics), so there are none to
  // move to the caller's rows.
  return run_recorded(core, std::move(sources), options, wrapped, recorder);
}

}  // namespace

RunMetrics run_journaled(ExecutionCore& core, SourceData sources,
                         const std::vector<std::string>& keys, const RunOptions& options,
                         const RootCallback& deliver, const OutputCodec& codec) {
  const std::size_t rows = sources.rows;
  const bool journaled = !options.journal.path.empty();
  if (journaled && !codec.available) {
    throw std::invalid_argument(
        "RunOptions.journal records root outputs, but this run's outputs cannot be encoded");
  }
  if (sources.feed) return run_journaled_lazy(core, std::move(sources), options, deliver, codec);
  if (keys.size() != rows) {
    throw std::invalid_argument(fmt::format(
        "the run journal needs one key per source row: {} keys for {} rows", keys.size(), rows));
  }
  std::optional<RunJournal> journal;
  if (journaled) {
    std::uint64_t digest = fnv1a64("keys");
    for (const std::string& k : keys) {
      // "<decimal length>:" then the key, as journals have always been digested.
      std::array<char, 24> size{};
      char* end = std::to_chars(size.data(), size.data() + size.size() - 1, k.size()).ptr;
      *end++ = ':';
      digest = fnv1a64(
          k, fnv1a64(std::string_view(size.data(), static_cast<std::size_t>(end - size.data())),
                     digest));
    }
    journal.emplace(options.journal, core.plan_fingerprint(), digest);
  }
  const std::unique_ptr<PartCommitter> sink = open_sink(options, journal ? &*journal : nullptr);
  std::optional<DeadLetterFile> dead;
  if (!options.dead_letters.empty()) dead.emplace(options.dead_letters);
  RootRecorder recorder{
      options, codec, deliver, journal ? &*journal : nullptr, sink.get(), dead ? &*dead : nullptr};

  // Rows recorded as finished are restored; the others run.
  std::vector<std::size_t> todo;
  std::vector<std::pair<std::size_t, const JournalEntry*>> restored;
  for (std::size_t r = 0; r < rows; ++r) {
    const JournalEntry* e = journal && !journal->empty() ? journal->recorded(keys[r]) : nullptr;
    if (restorable(e, codec.outputs, options)) {
      restored.emplace_back(r, e);
    } else {
      todo.push_back(r);
    }
  }
  const bool all = todo.size() == rows;
  if (!all) {
    // The rows to run, as a subset of the same blocks.
    for (auto& column : sources.values) {
      std::vector<const void*> subset;
      subset.reserve(todo.size());
      for (std::size_t r : todo) subset.push_back(column[r]);
      column = std::move(subset);
    }
    sources.rows = todo.size();
    sources.original_rows = todo;
  }
  for (const auto& [r, e] : restored) sources.restored.emplace_back(r, e->outcome());
  // Hands the i-th restored root to the caller (the run calls it after on_run_start).
  sources.deliver_restored = [&](std::size_t i) {
    const auto& [r, e] = restored[i];
    recorder.restored(r, keys[r], *e);
  };
  sources.journal_discarded_bytes = journal ? journal->discarded_bytes() : 0;
  const RootCallback wrapped = [&](std::size_t row, std::span<const ErasedOutput> e) {
    const std::size_t original = all ? row : todo[row];
    recorder.computed(original, keys[original], e);
  };
  RunMetrics m = run_recorded(core, std::move(sources), options, wrapped, recorder);
  if (!all) to_caller_rows(m, rows, todo);
  return m;
}

}  // namespace rayorch::detail
