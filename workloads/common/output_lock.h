// One run per output directory at a time. Jobs of a split corpus (--shard) pointed at the
// same folder would otherwise clear each other's temporaries and write one journal from two
// processes, losing outputs without a word.
#pragma once

#include <filesystem>
#include <string>

namespace workloads {

/// An exclusive lock on an output directory, held while the object lives. It is flock(2) on
/// the directory itself (no lock file is left behind), so the kernel releases it when the
/// process dies, SIGKILL included, and a --resume right after a crash finds it free. Worker
/// processes do not hold it: the descriptor is close-on-exec and the fork server keeps only
/// its own descriptors (execution/backends/fork_server.h).
class OutputLock {
 public:
  OutputLock() = default;
  /// Takes the lock on the existing directory `dir`. Throws InputError when another process
  /// holds it (naming `command` and the directory) or the directory cannot be opened.
  OutputLock(const std::filesystem::path& dir, const std::string& command);
  OutputLock(OutputLock&& other) noexcept;
  OutputLock& operator=(OutputLock&& other) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();

  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;  // owned; -1: no lock
};

}  // namespace workloads
