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

#include <rayorch/atomic_file.h>

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

}  // namespace

void remove_stale_temporaries(const std::string& dir, std::string_view infix) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with('.') && name.find(infix) != std::string::npos) {
      fs::remove(entry.path(), ec);
    }
  }
  rayorch::remove_atomic_temporaries(dir);
}

JsonlAppender::JsonlAppender(const std::string& path) : path_(path) {
  rayorch::write_file_atomically(path, "");
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
