// The output directory's lock. See output_lock.h.
#include "common/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/files.h"
#include <fmt/format.h>

namespace workloads {

OutputLock::OutputLock(const std::filesystem::path& dir, const std::string& command) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    throw InputError(
        fmt::format("cannot open output directory {}: {}", dir.string(), std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) {
      throw InputError(fmt::format(
          "output directory {} is in use by another {} run; wait for it to end, or give this "
          "run (or each job of a split) its own output directory",
          dir.string(), command));
    }
    throw InputError(
        fmt::format("cannot lock output directory {}: {}", dir.string(), std::strerror(error)));
  }
  fd_ = fd;
}

OutputLock::OutputLock(OutputLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

OutputLock::~OutputLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace workloads
