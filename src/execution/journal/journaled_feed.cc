// A lazy source seen through a run journal. See journaled_feed.h.
#include "execution/journal/journaled_feed.h"

#include <stdexcept>

#include <fmt/format.h>

namespace rayorch::detail {

bool restorable(const JournalEntry* entry, std::size_t outputs, const RunOptions& options) {
  return entry != nullptr && entry->ports.size() == outputs &&
         (entry->outcome() == Outcome::present || entry->outcome() == Outcome::dropped ||
          !options.journal.retry_failed);
}

JournaledFeed::JournaledFeed(std::shared_ptr<SourceFeed> source, const RunJournal* journal,
                             const RunOptions& options, std::size_t outputs)
    : source_(std::move(source)), journal_(journal), options_(options), outputs_(outputs) {}

SourceChunk JournaledFeed::next(std::size_t rows) {
  SourceChunk chunk = source_->next(rows);
  if (chunk.keys.size() != chunk.rows) {
    throw std::logic_error(
        fmt::format("internal error: a journaled lazy source gave {} keys for {} rows",
                    chunk.keys.size(), chunk.rows));
  }
  SourceChunk out;
  out.blocks = chunk.blocks;  // the rows run are views of the chunk's blocks
  out.values.resize(chunk.values.size());
  out.ended = chunk.ended;
  for (std::size_t i = 0; i < chunk.rows; ++i) {
    const std::size_t caller = pulled_ + i;
    const JournalEntry* entry =
        journal_ != nullptr && !journal_->empty() ? journal_->recorded(chunk.keys[i]) : nullptr;
    if (restorable(entry, outputs_, options_)) {
      out.restored.emplace_back(caller, entry->outcome());
      restored_.push_back(Restored{caller, entry, std::move(chunk.keys[i])});
      continue;
    }
    for (std::size_t c = 0; c < chunk.values.size(); ++c)
      out.values[c].push_back(chunk.values[c][i]);
    pending_.emplace(run_++, Pending{caller, std::move(chunk.keys[i])});
    out.caller_rows.push_back(caller);
    ++out.rows;
  }
  pulled_ += chunk.rows;
  return out;
}

JournaledFeed::Pending JournaledFeed::take(std::size_t row) {
  const auto it = pending_.find(row);
  if (it == pending_.end()) {
    throw std::logic_error(fmt::format("internal error: no journal key for run row {}", row));
  }
  Pending p = std::move(it->second);
  pending_.erase(it);
  return p;
}

}  // namespace rayorch::detail
