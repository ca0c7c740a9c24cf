// Appends committed records to an open journal file from a writer thread of its own, and
// flushes them to disk by the sync policy (rayorch/journal.h: durability).
//
// Threading: construct, commit and finish on one thread (the run's). The writer thread takes
// committed records, fills in their checksums and writes them (write(2)) in groups, at most
// JournalOptions::write_interval after the first of a group was committed (sooner once
// 64 KiB wait), and flushes them (fdatasync) every sync_every_records records or at the
// first group sync_interval after the last flush; the committing thread only copies a
// record into memory. After a failed write nothing more reaches the file (a gap would lose
// a record the caller believes written); the next commit() or finish() throws.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "rayorch/journal.h"

#include "execution/unique_fd.h"

namespace rayorch::detail {

class JournalFileWriter {
 public:
  /// Takes the file, positioned where records are appended; writes `first` (already framed
  /// and checksummed, e.g. a header; not flushed on its own) before starting the writer
  /// thread. Throws ExecutionError when that write fails.
  JournalFileWriter(UniqueFd file, const JournalOptions& options, std::string_view first);
  /// Writes and flushes what is left (finish()); an error then is printed on stderr.
  ~JournalFileWriter();
  JournalFileWriter(const JournalFileWriter&) = delete;
  JournalFileWriter& operator=(const JournalFileWriter&) = delete;

  /// Hands framed records (checksums still 0; `records` of them, written in one group) to
  /// the writer thread; throws ExecutionError when an earlier write or flush failed.
  void commit(std::string_view records_bytes, std::size_t records = 1);
  /// Waits until every committed record is written, then flushes the file to disk on this
  /// thread; throws ExecutionError when a write or the flush failed.
  void sync();
  /// Writes every committed record and flushes the file to disk; idempotent. Throws
  /// ExecutionError when a write or flush failed.
  void finish();

 private:
  void writer_loop();
  void write_all(std::string_view bytes);
  void sync_file();

  JournalOptions options_;
  UniqueFd file_;
  // Shared with the writer thread, under mutex_.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable written_;  // a group was written (sync() waits for it)
  std::string pending_;
  std::size_t pending_records_ = 0;
  bool writing_now_ = false;  // the writer thread holds a group it has not written yet
  bool sync_asked_ = false;   // sync() waits: write now, without waiting for a fuller group
  bool stop_ = false;
  std::string error_;
  std::atomic<bool> failed_{false};
  // The writer thread's own.
  std::string writing_;
  std::size_t unsynced_ = 0;
  std::chrono::steady_clock::time_point last_sync_;
  std::thread writer_;  // last: started once everything above is built
};

}  // namespace rayorch::detail
