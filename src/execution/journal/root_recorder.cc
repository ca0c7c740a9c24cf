// Where each root of a journaled run goes. See root_recorder.h.
#include "execution/journal/root_recorder.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string_view>
#include <utility>
#include <vector>

#include "execution/journal/format.h"

namespace rayorch::detail {

namespace {

void dead_letter(DeadLetterFile& file, const RunOptions& options, const std::string& key,
                 std::size_t row, std::span<const ErasedOutput> e, bool restored) {
  for (std::size_t k = 0; k < e.size(); ++k) {
    if (e[k].outcome == Outcome::present) continue;
    DeadLetter d{key,         row,     e[k].outcome, k, e[k].cause ? *e[k].cause : std::string(),
                 e[k].origin, restored};
    if (options.dead_letter_fields) d.fields = options.dead_letter_fields(row);
    file.write(d);
    return;
  }
}

// A root's record: per output its outcome, cause, origin and encoded value, straight into
// the journal's reusable record buffer; committed, or held for the sink's open part.
void record_root(RunJournal& journal, const OutputCodec& codec, const std::string& key,
                 std::span<const ErasedOutput> e, bool hold = false) {
  std::string& out = journal.begin_record(key, static_cast<std::uint32_t>(e.size()));
  for (std::size_t k = 0; k < e.size(); ++k) {
    journal_format::put_port(out, e[k].outcome,
                             e[k].cause ? std::string_view(*e[k].cause) : std::string_view(),
                             e[k].origin);
    const std::size_t at = journal_format::begin_value(out);
    if (e[k].outcome == Outcome::present) codec.encode(k, e[k].value, out);
    journal_format::end_value(out, at);
  }
  if (hold) {
    journal.hold();
  } else {
    journal.commit();
  }
}

// A restored root that is not present becomes a dead letter too (marked restored).
void dead_letter_restored(DeadLetterFile& file, const RunOptions& options, const std::string& key,
                          std::size_t row, const JournalEntry& entry) {
  if (entry.outcome() == Outcome::present) return;
  std::vector<ErasedOutput> issue(entry.ports.size());
  for (std::size_t k = 0; k < entry.ports.size(); ++k) {
    const JournalPort& p = entry.ports[k];
    issue[k] = ErasedOutput{p.outcome, &p.cause, nullptr, p.origin};
  }
  dead_letter(file, options, key, row, issue, true);
}

bool all_present(std::span<const ErasedOutput> e) {
  return std::all_of(e.begin(), e.end(),
                     [](const ErasedOutput& o) { return o.outcome == Outcome::present; });
}

}  // namespace

void RootRecorder::computed(std::size_t row, const std::string& key,
                            std::span<const ErasedOutput> e) {
  deliver(row, e);  // delivered first: a recorded root was received by the caller
  const bool staged = sink != nullptr && all_present(e);
  if (staged) stage(row, key, e);
  if (journal) record_root(*journal, codec, key, e, staged);
  if (staged) roll();
  if (dead) dead_letter(*dead, options, key, row, e, false);
}

void RootRecorder::restored(std::size_t row, const std::string& key, const JournalEntry& entry) {
  if (dead) dead_letter_restored(*dead, options, key, row, entry);
  if (sink == nullptr || entry.outcome() != Outcome::present || sink->in_place(entry)) {
    codec.restore(row, entry, deliver);
    return;
  }
  codec.restore(row, entry, [&](std::size_t r, std::span<const ErasedOutput> e) {
    deliver(r, e);
    stage(r, key, e);
    if (journal) record_root(*journal, codec, key, e, true);
    roll();
  });
}

void RootRecorder::stage(std::size_t row, const std::string& key, std::span<const ErasedOutput> e) {
  try {
    sink->stage(SinkRoot{key, row, e});
  } catch (...) {
    sink_failed = true;
    throw;
  }
}

void RootRecorder::roll() {
  try {
    sink->roll_if_due();
  } catch (...) {
    sink_failed = true;
    throw;
  }
}

std::unique_ptr<PartCommitter> open_sink(const RunOptions& options, RunJournal* journal) {
  if (!options.sink.enabled()) return nullptr;
  const bool fresh = journal == nullptr || (journal->empty() && journal->parts().empty() &&
                                            journal->uncommitted().empty());
  return std::make_unique<PartCommitter>(options.sink, journal, fresh);
}

RunMetrics run_recorded(ExecutionCore& core, SourceData sources, const RunOptions& options,
                        const RootCallback& wrapped, RootRecorder& recorder) {
  RunMetrics m;
  try {
    m = core.run(std::move(sources), options, wrapped);
  } catch (...) {
    try {
      if (recorder.sink != nullptr && recorder.sink_failed) recorder.sink->abandon();
      if (recorder.sink != nullptr && !recorder.sink_failed) recorder.sink->commit();
      if (recorder.journal != nullptr) recorder.journal->finish();
      // The parts committed before stay readable, the run marked incomplete.
      if (recorder.sink != nullptr) recorder.sink->write_manifest(false);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rayorch: after the run stopped: %s\n", e.what());
    } catch (...) {
      // A callback's own exception type (the Python package's): the first error is the one
      // the run reports.
      std::fprintf(stderr, "rayorch: after the run stopped, its sink could not be closed\n");
    }
    throw;
  }
  if (recorder.sink != nullptr) recorder.sink->commit();
  if (recorder.journal != nullptr) recorder.journal->finish();
  if (recorder.sink != nullptr) recorder.sink->write_manifest(true);
  return m;
}

}  // namespace rayorch::detail
