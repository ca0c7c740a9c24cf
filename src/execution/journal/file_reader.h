// Reads an open journal file: the records up to the first one whose frame, checksum or
// payload does not hold, and cuts the rest (a torn or corrupt tail) off the file.
#pragma once

#include <cstdint>
#include <map>
#include <set>
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
  /// The last header's version.
  std::uint32_t version = 0;
  /// Per key, its last root record; a root record of a part counts once the part is
  /// committed (all its root records read), and leaves when a later part takes its name.
  std::unordered_map<std::string, JournalEntry> entries;
  /// The sink's committed parts by name: their sequence numbers and root counts.
  struct Part {
    std::uint64_t sequence = 0;
    std::uint64_t roots = 0;
  };
  std::map<std::string, Part> parts;
  /// Parts whose intent was recorded but that were not committed: a crash came between
  /// (the file, if it exists, holds roots the journal does not count).
  std::set<std::string> uncommitted;
  /// Bytes of torn or corrupt tail cut off.
  std::uint64_t discarded_bytes = 0;
};

/// Reads the journal file open as `fd` (read-write), truncates it to its last good record and
/// leaves the file offset there, for appending. `path` names it in messages. Throws
/// std::invalid_argument when it is not a regular file, cannot be read or cut, or has an
/// unsupported version.
JournalContents read_journal_file(int fd, const std::string& path);

}  // namespace rayorch::detail
