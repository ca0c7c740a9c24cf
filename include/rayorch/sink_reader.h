// Reading a sink's output as the next job does (docs/IO.md): only the parts its manifest
// lists, each complete and committed; any other file in the directory is not a result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rayorch {

/// What a sink's `_manifest.json` says of its directory.
struct CommittedOutput {
  std::vector<std::string> parts{};  ///< paths of the committed parts, in sequence order
  std::uint64_t rows = 0;            ///< roots in them
  bool complete = false;             ///< the run that wrote it accounted for every root
};

/// Reads `<directory>/_manifest.json`. Throws std::invalid_argument naming the file when
/// there is none (no sink wrote there, or its first run has not ended) or it is not a sink's.
CommittedOutput read_committed_output(const std::string& directory);

/// Every line of the committed parts, in order, without newlines (JSON-lines sinks). Throws
/// std::invalid_argument as read_committed_output, or naming a part that cannot be read.
std::vector<std::string> read_committed_lines(const std::string& directory);

}  // namespace rayorch
