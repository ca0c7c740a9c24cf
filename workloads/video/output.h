// Durable output files of the video workload: whole files replaced atomically, and JSON
// Lines files that grow by one complete, synced line per record (workloads/common/output.h,
// with this workload's temporary-file infix).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/output.h"

namespace video {

/// Names of temporary files contain this, so leftovers of an interrupted run can be found
/// and removed without touching anything else.
inline constexpr std::string_view kTempInfix = ".video2jsonl-tmp-";

/// The project's atomic writer (rayorch/atomic_file.h).
using rayorch::write_file_atomically;

/// Removes the temporaries an interrupted run left in `dir` (see
/// workloads::remove_stale_temporaries).
inline void remove_stale_temporaries(const std::string& dir) {
  workloads::remove_stale_temporaries(dir, kTempInfix);
}

/// A JSON Lines file written one record at a time (see workloads::JsonlAppender).
class JsonlAppender : public workloads::JsonlAppender {
 public:
  /// Replaces `path` atomically with an empty file and opens it for appending.
  explicit JsonlAppender(const std::string& path) : workloads::JsonlAppender(path) {}
};

/// The newline-terminated lines of a file, without their newlines; a torn last line is left
/// out. Throws std::runtime_error when the file cannot be read.
using workloads::read_complete_lines;

}  // namespace video
