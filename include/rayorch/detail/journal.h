// The untyped parts of the run journal, dead letters and root keys (rayorch/journal.h);
// the typed run() in rayorch/executor.h drives them. Implemented in src/execution/journal.cc.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rayorch/journal.h"
#include "rayorch/outcome.h"

namespace rayorch::detail {

/// 64-bit FNV-1a.
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t h = 0xcbf29ce484222325ULL);
/// 16 lower-case hex digits.
std::string hex64(std::uint64_t v);
/// IEEE CRC-32 (as zlib's crc32).
std::uint32_t crc32(std::string_view bytes);

/// One output Port of a recorded root.
struct JournalPort {
  Outcome outcome = Outcome::dropped;
  std::string cause;
  std::optional<IssueOrigin> origin;
  std::string value;  ///< Codec bytes when present
};

/// A recorded root.
struct JournalEntry {
  std::vector<JournalPort> ports;
  /// The first outcome that is not present, else present.
  Outcome outcome() const;
};

/// An open journal file: the records it held when opened, and appends.
///
/// Threading: construct, read, begin_record/commit and finish on one thread (the run's). A
/// writer thread of the journal's own takes committed records, fills in their checksums and
/// writes them (write(2)) in groups, at most `write_interval` after the first of a group was
/// committed (sooner once 64 KiB wait), and flushes them to disk by the sync policy; the
/// committing thread only copies a record into memory.
class RunJournal {
 public:
  /// Opens (or creates) the journal; cuts a torn tail; throws std::invalid_argument when the
  /// path cannot be opened for writing, or when the journal belongs to another plan or (unless
  /// options.allow_other_inputs) other inputs and !options.force.
  RunJournal(const JournalOptions& options, std::uint64_t plan_fingerprint,
             std::uint64_t inputs_digest);
  /// Writes and flushes what is left (finish()); an error then is printed on stderr.
  ~RunJournal();
  RunJournal(const RunJournal&) = delete;
  RunJournal& operator=(const RunJournal&) = delete;

  /// Whether the journal held no root record when opened.
  bool empty() const { return entries_.empty(); }
  /// The record for `key` when it was recorded before this run (nullptr otherwise).
  const JournalEntry* recorded(const std::string& key) const;

  /// Starts a root's record in a buffer reused from record to record and returns it: append
  /// `ports` ports, each with put_port and a value between begin_value and end_value, then
  /// commit().
  std::string& begin_record(std::string_view key, std::uint32_t ports);
  /// A port's outcome, cause and issue origin.
  static void put_port(std::string& out, Outcome outcome, std::string_view cause,
                       const std::optional<IssueOrigin>& origin);
  /// Around the Codec bytes of a port's value (none when not present).
  static std::size_t begin_value(std::string& out);
  static void end_value(std::string& out, std::size_t at);
  /// Hands the record to the writer thread; throws ExecutionError when an earlier write or
  /// flush failed.
  void commit();
  /// Writes every committed record and flushes the file to disk; idempotent. Throws
  /// ExecutionError when a write or flush failed.
  void finish();
  /// Bytes of torn or corrupt tail cut off when opening.
  std::uint64_t discarded_bytes() const { return discarded_; }

 private:
  void writer_loop();
  // Fills in the checksums of the framed records in `bytes` and writes them.
  void write_out(std::string& bytes);
  void write_all(std::string_view bytes);
  void sync_file();

  JournalOptions options_;
  int fd_ = -1;
  std::unordered_map<std::string, JournalEntry> entries_;
  std::uint64_t discarded_ = 0;
  std::string record_;  // the record being built (committing thread)
  // Shared with the writer thread, under mutex_.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string pending_;
  std::size_t pending_records_ = 0;
  bool stop_ = false;
  std::string error_;
  std::atomic<bool> failed_{false};
  // The writer thread's own.
  std::string writing_;
  std::size_t unsynced_ = 0;
  std::chrono::steady_clock::time_point last_sync_;
  std::thread writer_;
};

/// One dead letter: a root that is not present.
struct DeadLetter {
  std::string key;
  std::size_t row = 0;
  Outcome outcome = Outcome::dropped;
  std::size_t output = 0;  ///< the first output Port that is not present
  std::string cause;
  std::optional<IssueOrigin> origin;
  bool restored = false;  ///< delivered from the journal
  /// RunOptions::dead_letter_fields of the row.
  std::vector<std::pair<std::string, std::string>> fields{};
};

/// Writes dead letters as JSON lines (RunOptions::dead_letters).
class DeadLetterFile {
 public:
  /// Creates (truncates) the file; throws std::invalid_argument when it cannot.
  explicit DeadLetterFile(const std::string& path);
  ~DeadLetterFile();
  DeadLetterFile(const DeadLetterFile&) = delete;
  DeadLetterFile& operator=(const DeadLetterFile&) = delete;
  /// Appends one line and flushes it; throws ExecutionError when the write fails.
  void write(const DeadLetter& letter);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace rayorch::detail
