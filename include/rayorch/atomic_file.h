// Writing a file so that readers see either its old content or the complete new one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rayorch {

/// Marks the temporary files of write_file_atomically: ".<file name>.rayorch-tmp-<pid>-<thread>"
/// in the target's directory. A process killed mid-write leaves one behind; a resuming
/// writer removes them with remove_atomic_temporaries.
inline constexpr std::string_view kAtomicTemporaryInfix = ".rayorch-tmp-";

/// Writes `content` to `path` through a temporary file in the same directory, flushed to
/// disk (fsync) and renamed into place, then syncs the directory; on any failure the
/// temporary is removed and the target is untouched. Throws ExecutionError naming the path
/// and the reason (missing or read-only directory, disk full). Thread-safe.
void write_file_atomically(const std::string& path, std::string_view content);

/// Removes the temporaries write_file_atomically left in `dir` (not recursive); returns how
/// many. Call it only while no other writer uses that directory.
std::size_t remove_atomic_temporaries(const std::string& dir);

}  // namespace rayorch
