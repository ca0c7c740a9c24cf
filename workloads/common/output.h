// Durable output files: whole files replaced atomically, and JSON Lines files that grow by
// one complete, synced line per record.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace workloads {

// Names of temporary files contain a workload's `infix` (e.g. ".pdf2md-tmp-"), so leftovers
// of an interrupted run can be found and removed without touching anything else.

/// Temporary file `.<name><infix><pid>` + fsync + rename + directory fsync: readers see the
/// old file or the whole new one, even across a crash. Throws std::runtime_error naming the
/// file.
void write_file_atomically(const std::string& path, std::string_view content,
                           std::string_view infix);

/// Removes files in `dir` whose names start with a dot and carry `infix`.
void remove_stale_temporaries(const std::string& dir, std::string_view infix);

/// A JSON Lines file written one record at a time. Each append is one write(2) of the whole
/// line on an O_APPEND descriptor, then fdatasync: a record is durable once append()
/// returns, and an interruption can at worst leave an unterminated last line, which readers
/// ignore (see read_complete_lines).
class JsonlAppender {
 public:
  /// Replaces `path` atomically (temporary files carry `infix`) with an empty file and opens
  /// it for appending.
  JsonlAppender(const std::string& path, std::string_view infix);
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
