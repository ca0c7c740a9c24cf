// The untyped parts of the run journal shared with the typed run() (rayorch/executor.h) and
// the Python package: root keys (hashing) and recorded roots. The file, its writer and dead
// letters are internal (src/execution/journal/).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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
  /// The sink's committed part that holds it (rayorch/sink.h); empty: none.
  std::string part;
  /// The first outcome that is not present, else present.
  Outcome outcome() const;
};

}  // namespace rayorch::detail
