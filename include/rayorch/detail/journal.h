// The untyped parts of the run journal, dead letters and root keys (rayorch/journal.h);
// the typed run() in rayorch/executor.h drives them. Implemented in src/execution/journal.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
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
class RunJournal {
 public:
  /// Opens (or creates) the journal; cuts a torn tail; throws std::invalid_argument when the
  /// path cannot be opened for writing, or when the journal belongs to another plan or other
  /// inputs and !options.force.
  RunJournal(const JournalOptions& options, std::uint64_t plan_fingerprint,
             std::uint64_t inputs_digest);
  ~RunJournal();
  RunJournal(const RunJournal&) = delete;
  RunJournal& operator=(const RunJournal&) = delete;

  /// The record for `key` when it was recorded before this run (nullptr otherwise).
  const JournalEntry* recorded(const std::string& key) const;
  /// Appends a root's record; throws ExecutionError when the write fails.
  void append(const std::string& key, std::span<const JournalPort> ports);
  /// Flushes written records to disk.
  void sync();
  /// Bytes of torn or corrupt tail cut off when opening.
  std::uint64_t discarded_bytes() const { return discarded_; }

 private:
  void write_record(const std::string& payload);

  JournalOptions options_;
  int fd_ = -1;
  std::unordered_map<std::string, JournalEntry> entries_;
  std::uint64_t discarded_ = 0;
  std::size_t unsynced_ = 0;
  std::chrono::steady_clock::time_point last_sync_;
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
