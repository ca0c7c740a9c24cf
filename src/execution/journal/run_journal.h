// An open run journal (rayorch/journal.h): the records it held when opened, checked
// against this run's plan and inputs, and the appending of this run's roots.
//
// Threading: construct, read, begin_record/commit/hold, the part calls and finish on one
// thread (the run's);
// the writing happens on the file writer's own thread (file_writer.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

#include "rayorch/detail/journal.h"
#include "rayorch/journal.h"

#include "execution/journal/file_reader.h"
#include "execution/journal/file_writer.h"

namespace rayorch::detail {

class RunJournal {
 public:
  /// Opens (or creates) the journal; cuts a torn tail; throws std::invalid_argument when the
  /// path cannot be opened for writing, or when the journal belongs to another plan or (unless
  /// options.allow_other_inputs) other inputs and !options.force.
  RunJournal(const JournalOptions& options, std::uint64_t plan_fingerprint,
             std::uint64_t inputs_digest);

  /// Whether the journal held no root record when opened.
  bool empty() const { return entries_.empty(); }
  /// The record for `key` when it was recorded before this run (nullptr otherwise).
  const JournalEntry* recorded(const std::string& key) const;

  /// Starts a root's record in a buffer reused from record to record and returns it: append
  /// `ports` ports, each with journal_format::put_port and a value between begin_value and
  /// end_value (execution/journal/format.h), then commit().
  std::string& begin_record(std::string_view key, std::uint32_t ports);
  /// Hands the record to the writer thread; throws ExecutionError when an earlier write or
  /// flush failed.
  void commit();
  /// Keeps the record back for the part being staged (commit_part writes it).
  void hold();
  /// Records that part `name` is about to become visible and waits until the record is on
  /// disk (fdatasync): a crash after its rename leaves a part the next run knows to remove.
  void record_intent(std::string_view name);
  /// Commits part `name`: its part record and the records held since the last part, as one
  /// group. Returns how many roots it holds.
  std::size_t commit_part(std::string_view name, std::uint64_t sequence);
  /// Drops the records held for a part that will not be committed.
  void drop_held() noexcept {
    held_.clear();
    held_roots_ = 0;
  }
  /// Roots held for the part being staged.
  std::size_t held() const { return held_roots_; }
  /// Forgets the roots of committed part `name` (its file is gone): they run again.
  void forget_part(const std::string& name);
  /// The committed parts and the uncommitted intents when opened (file_reader.h).
  const std::map<std::string, JournalContents::Part>& parts() const { return parts_; }
  const std::set<std::string>& uncommitted() const { return uncommitted_; }
  /// Writes every committed record and flushes the file to disk; idempotent. Throws
  /// ExecutionError when a write or flush failed.
  void finish() { writer_->finish(); }
  /// Bytes of torn or corrupt tail cut off when opening.
  std::uint64_t discarded_bytes() const { return discarded_; }

 private:
  std::unordered_map<std::string, JournalEntry> entries_;
  std::map<std::string, JournalContents::Part> parts_;
  std::set<std::string> uncommitted_;
  std::uint64_t discarded_ = 0;
  std::string record_;  // the record being built
  std::string held_;    // framed root records of the part being staged
  std::size_t held_roots_ = 0;
  std::optional<JournalFileWriter> writer_;
};

}  // namespace rayorch::detail
