// Definitions of rayorch/atomic_file.h.
#include "rayorch/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "rayorch/errors.h"

namespace rayorch {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const char* what, const std::string& path, int err) {
  throw ExecutionError(fmt::format("cannot {} {}: {}", what, path, std::strerror(err)));
}

void write_all(int fd, std::string_view content, const std::string& path) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", path, errno);
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Makes the rename durable; best effort (some filesystems cannot open directories).
void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view content) {
  // The thread's id keeps concurrent writers of one path apart.
  const fs::path target(path);
  const fs::path tmp =
      target.parent_path() / fmt::format(".{}{}{}-{:x}", target.filename().string(),
                                         kAtomicTemporaryInfix, ::getpid(),
                                         std::hash<std::thread::id>{}(std::this_thread::get_id()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("create", tmp.string(), errno);
  try {
    write_all(fd, content, tmp.string());
    if (::fsync(fd) != 0) fail("sync", tmp.string(), errno);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("move into place", path, err);
  }
  sync_directory(target.parent_path());
}

std::size_t remove_atomic_temporaries(const std::string& dir) {
  std::size_t removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with('.') && name.find(kAtomicTemporaryInfix) != std::string::npos &&
        fs::remove(entry.path(), ec)) {
      ++removed;
    }
  }
  return removed;
}

}  // namespace rayorch
