// Atomic files and appended JSON Lines of the workloads. See output.h.
#include "common/output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace workloads {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(fmt::format("cannot {} {}: {}", what, path, std::strerror(errno)));
}

void write_all(int fd, std::string_view content, const std::string& path) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", path);
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Makes a rename inside `dir` durable.
void sync_directory(const fs::path& dir) {
  const std::string name = dir.empty() ? "." : dir.string();
  const int fd = ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: some filesystems do not allow opening directories
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view content,
                           std::string_view infix) {
  const fs::path target(path);
  const fs::path tmp =
      target.parent_path() / fmt::format(".{}{}{}", target.filename().string(), infix, ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create", tmp.string());
  try {
    write_all(fd, content, tmp.string());
    if (::fsync(fd) != 0) fail("sync", tmp.string());
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(
        fmt::format("cannot move {} into place: {}", path, std::strerror(err)));
  }
  sync_directory(target.parent_path());
}

void remove_stale_temporaries(const std::string& dir, std::string_view infix) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with('.') && name.find(infix) != std::string::npos) {
      fs::remove(entry.path(), ec);
    }
  }
}

JsonlAppender::JsonlAppender(const std::string& path, std::string_view infix) : path_(path) {
  write_file_atomically(path, "", infix);
  fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ < 0) fail("open", path);
}

JsonlAppender::~JsonlAppender() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonlAppender::append(std::string_view line) {
  if (line.find('\n') != std::string_view::npos) {
    throw std::invalid_argument(
        fmt::format("a JSON Lines record for {} contains a newline", path_));
  }
  std::string buf;
  buf.reserve(line.size() + 1);
  buf.append(line);
  buf.push_back('\n');
  try {
    write_all(fd_, buf, path_);
    if (::fdatasync(fd_) != 0) fail("sync", path_);
  } catch (...) {
    // A short write (a full disk) would glue the next record onto a fragment; cutting the
    // file back to its last complete line keeps every line a whole record.
    if (::ftruncate(fd_, size_) != 0) { /* the fragment stays unterminated: readers skip it */
    }
    throw;
  }
  size_ += static_cast<long long>(buf.size());
}

std::vector<std::string> read_complete_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", path));
  std::ostringstream s;
  s << in.rdbuf();
  const std::string content = s.str();
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl = content.find('\n'); nl != std::string::npos;
       nl = content.find('\n', start)) {
    lines.push_back(content.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

}  // namespace workloads
