// A lazy source seen through a run journal (run_journaled): each row pulled from the source
// is keyed (SourceChunk::keys, computed by the source's feed), and a row the journal
// recorded finished is restored instead of run. Nothing is kept per row once its root was
// delivered: a row run keeps its caller's row and its key until then (so memory stays flat
// over any number of rows), a restored row its record (which the journal holds anyway).
//
// Threading: the driver thread (as SourceFeed), the sink and the restore calls run on it too.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rayorch/executor.h"

#include "execution/journal/run_journal.h"

namespace rayorch::detail {

/// Whether `entry` (nullptr: not recorded) is a finished root that a run restores instead of
/// running it: present or dropped, or any outcome unless journal.retry_failed.
bool restorable(const JournalEntry* entry, std::size_t outputs, const RunOptions& options);

class JournaledFeed final : public SourceFeed {
 public:
  /// `journal` (nullptr: none, the keys serve the dead letters only) outlives the feed.
  JournaledFeed(std::shared_ptr<SourceFeed> source, const RunJournal* journal,
                const RunOptions& options, std::size_t outputs);

  SourceChunk next(std::size_t rows) override;

  /// Rows pulled so far, restored ones included.
  std::size_t pulled() const { return pulled_; }
  /// A root restored from the journal.
  struct Restored {
    std::size_t row;  ///< the caller's row
    const JournalEntry* entry;
    std::string key;
  };
  /// The restored root `i` (numbered as SourceChunk::restored).
  const Restored& restored(std::size_t i) const { return restored_[i]; }
  /// A row run until its root is delivered: the caller's row and the key.
  struct Pending {
    std::size_t caller;
    std::string key;
  };
  /// Run row `row`'s caller row and key, once, when its root is delivered.
  Pending take(std::size_t row);

 private:
  std::shared_ptr<SourceFeed> source_;
  const RunJournal* journal_;
  const RunOptions& options_;
  std::size_t outputs_;
  std::size_t pulled_ = 0;
  std::size_t run_ = 0;                               // rows run so far
  std::unordered_map<std::size_t, Pending> pending_;  // by run row, until delivered
  std::vector<Restored> restored_;
};

}  // namespace rayorch::detail
