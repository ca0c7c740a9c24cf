// Feeds a sink (rayorch/sink.h): stages present roots into the open part and commits parts
// with the run journal, so that a root is recorded finished only once the part holding it is
// visible, and a crash leaves nothing a resume cannot tell apart (docs/IO.md).
//
// Committing a part, in this order: the writer flushes the temporary file to disk; the
// journal records the intent (the part's name) and flushes it; the temporary is renamed to
// the part's name and the directory flushed; the journal appends the part record followed
// by the held root records, as one group. A crash before the intent leaves a temporary; after
// the intent and before the part record, a part the journal calls uncommitted: the next run
// removes both before anything runs, and their roots run again.
//
// Threading: the run's thread only (the one delivering roots). Owns the open part's writer;
// the journal (nullptr: none) outlives it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "rayorch/detail/journal.h"
#include "rayorch/sink.h"

#include "execution/sink/manifest.h"

namespace rayorch::detail {

class RunJournal;

class PartCommitter {
 public:
  /// Prepares the directory for this run (created when missing): removes `_SUCCESS`, the
  /// manifest, the temporaries a crash left, the parts the journal holds an intent for but
  /// not their commit, and the parts an earlier manifest lists that the journal does not
  /// hold (every one when the journal is new or absent: a new journal starts a new output).
  /// Throws std::invalid_argument when the options are not usable or the directory cannot be
  /// created or written.
  PartCommitter(const SinkOptions& options, RunJournal* journal, bool journal_is_new);
  ~PartCommitter();
  PartCommitter(const PartCommitter&) = delete;
  PartCommitter& operator=(const PartCommitter&) = delete;

  /// Whether a restored root is in a committed part in place (else it is staged again).
  bool in_place(const JournalEntry& entry) const;
  /// Writes a present root into the open part, opening one first. The caller holds the
  /// root's journal record (RunJournal::hold) after this and then calls roll_if_due().
  void stage(const SinkRoot& root);
  /// Commits the open part once it is full or old (SinkOptions).
  void roll_if_due();
  /// Commits the open part, if it holds any root.
  void commit();
  /// Drops the open part (its roots are not recorded); for a run whose sink failed.
  void abandon() noexcept;
  /// Writes the manifest of every committed part, earlier runs' included.
  void write_manifest(bool complete) const;

  /// Parts committed by this run.
  std::size_t parts_committed() const { return committed_this_run_.size(); }
  /// Files removed when preparing the directory: temporaries, uncommitted parts and the
  /// parts of an earlier output.
  std::size_t removed() const { return removed_; }

 private:
  std::string path_of(const std::string& name) const;

  SinkOptions options_;
  std::size_t rows_per_part_;
  RunJournal* journal_;
  std::map<std::string, ManifestPart> committed_;  // by name, in place on disk
  std::set<std::string> committed_this_run_;
  std::uint64_t next_sequence_ = 0;
  std::size_t removed_ = 0;
  // The open part.
  std::unique_ptr<PartWriter> writer_;
  std::string name_;
  std::string temporary_;
  std::size_t rows_ = 0;
  std::chrono::steady_clock::time_point opened_at_{};
};

}  // namespace rayorch::detail
