// Durable output files: whole files replaced atomically, and JSON Lines files that grow by
// one complete, synced line per record.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <rayorch/atomic_file.h>

namespace workloads {

// Whole files are written with rayorch::write_file_atomically (rayorch/atomic_file.h), the
// project's one atomic writer.

/// Removes the temporaries an interrupted run left in `dir`: those of
/// rayorch::write_file_atomically, and those of earlier versions, whose names start with a
/// dot and carry the workload's `infix` (e.g. ".pdf2md-tmp-").
void remove_stale_temporaries(const std::string& dir, std::string_view infix);

/// A JSON Lines file written one record at a time. Each append is one write(2) of the whole
/// line on an O_APPEND descriptor, then fdatasync: a record is durable once append()
/// returns, and an interruption can at worst leave an unterminated last line, which readers
/// ignore (see read_complete_lines).
class JsonlAppender {
 public:
  /// Replaces `path` atomically with an empty file and opens it for appending.
  explicit JsonlAppender(const std::string& path);
  ~JsonlAppender();
  JsonlAppender(const JsonlAppender&) = delete;
  JsonlAppender& operator=(const JsonlAppender&) = delete;

  /// Appends `line` and a newline. `line` must not contain a newline.
  void append(std::string_view line);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  long long size_ = 0;  // bytes of complete lines written
};

/// The newline-terminated lines of a file, without their newlines; a torn last line is left
/// out. Throws std::runtime_error when the file cannot be read.
std::vector<std::string> read_complete_lines(const std::string& path);

}  // namespace workloads
