// Dead letters (RunOptions::dead_letters): one JSON line per root that is not present.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rayorch/outcome.h"

namespace rayorch::detail {

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

/// Writes dead letters as JSON lines. Threading: one thread at a time.
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
  std::FILE* file_ = nullptr;  // owned
};

}  // namespace rayorch::detail
