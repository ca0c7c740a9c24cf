// A sink's manifest (`_manifest.json`, rayorch/sink.h): the committed parts a reader may
// trust, written atomically at the end of each run, and `_SUCCESS` when the run completed.
//
// The format (version 1):
//   {"format": "rayorch-sink", "version": 1, "complete": true|false, "rows": N,
//    "parts": [{"name": "part-00000.jsonl", "sequence": 0, "rows": N}, ...]}
// parts ordered by sequence; `rows` sums theirs. Unknown keys are ignored by the reader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rayorch::detail {

inline constexpr const char* kManifestName = "_manifest.json";
inline constexpr const char* kSuccessName = "_SUCCESS";

/// A committed part as the manifest lists it.
struct ManifestPart {
  std::string name;
  std::uint64_t sequence = 0;
  std::uint64_t rows = 0;
};

/// Writes `<directory>/_manifest.json` atomically (parts sorted by sequence), then
/// `_SUCCESS` when `complete`. Throws ExecutionError naming the file that could not be
/// written.
void write_manifest(const std::string& directory, std::vector<ManifestPart> parts, bool complete);

/// The parts `<directory>/_manifest.json` lists; empty when there is none. Throws
/// std::invalid_argument naming the file when it is not a sink's manifest.
std::vector<ManifestPart> read_manifest(const std::string& directory);

}  // namespace rayorch::detail
