// Reads an open journal file: the records up to the first one whose frame, checksum or
// payload does not hold, and cuts the rest (a torn or corrupt tail) off the file.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "rayorch/detail/journal.h"

namespace rayorch::detail {

/// What a journal file held when it was opened.
struct JournalContents {
  /// The last header's fingerprints; none when the file held no header (empty or foreign).
  bool have_header = false;
  std::uint64_t plan_fingerprint = 0;
  std::uint64_t inputs_digest = 0;
  /// Per key, its last root record.
  std::unordered_map<std::string, JournalEntry> entries;
  /// Bytes of torn or corrupt tail cut off.
  std::uint64_t discarded_bytes = 0;
};

/// Reads the journal file open as `fd` (read-write), truncates it to its last good record and
/// leaves the file offset there, for appending. `path` names it in messages. Throws
/// std::invalid_argument when it is not a regular file, cannot be read or cut, or has an
/// unsupported version.
JournalContents read_journal_file(int fd, const std::string& path);

}  // namespace rayorch::detail
