// The sink formats of rayorch/sink.h: JSON lines and one file per root, both written through
// a buffered file writer that flushes the file to disk when the part is finished.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "rayorch/atomic_file.h"
#include "rayorch/errors.h"
#include "rayorch/sink.h"

namespace rayorch {
namespace {

// Bytes gathered before they are written (write(2)).
constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

[[noreturn]] void fail_sink(const char* what, const std::string& path, int err) {
  throw ExecutionError(fmt::format("sink: cannot {} {}: {}", what, path, std::strerror(err)));
}

// A part's file: the format appends a root's bytes to `buffer_` (through append()), which is
// written out once it is large and at finish(), then flushed to disk. Owns the descriptor.
class FilePartWriter : public PartWriter {
 public:
  explicit FilePartWriter(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail_sink("create", path_, errno);
  }
  ~FilePartWriter() override {
    if (fd_ >= 0) ::close(fd_);
  }
  FilePartWriter(const FilePartWriter&) = delete;
  FilePartWriter& operator=(const FilePartWriter&) = delete;

  std::uint64_t bytes() const override { return written_ + buffer_.size(); }

  void finish() override {
    write_out();
    if (::fsync(fd_) != 0) fail_sink("flush to disk", path_, errno);
    if (::close(std::exchange(fd_, -1)) != 0) fail_sink("close", path_, errno);
  }

 protected:
  std::string& buffer() { return buffer_; }
  // Writes the buffer out once it is large.
  void appended() {
    if (buffer_.size() >= kBufferBytes) write_out();
  }

 private:
  void write_out() {
    std::string_view rest = buffer_;
    while (!rest.empty()) {
      const ssize_t n = ::write(fd_, rest.data(), rest.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail_sink("write", path_, errno);
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    written_ += buffer_.size();
    buffer_.clear();
  }

  std::string path_;
  int fd_ = -1;
  std::string buffer_;
  std::uint64_t written_ = 0;
};

using Render = std::function<void(const SinkRoot&, std::string& out)>;

class JsonlWriter final : public FilePartWriter {
 public:
  JsonlWriter(std::string path, const Render& line)
      : FilePartWriter(std::move(path)), line_(line) {}
  void write(const SinkRoot& root) override {
    line_(root, buffer());
    buffer().push_back('\n');
    appended();
  }

 private:
  const Render& line_;  // owned by the format, which outlives its writers
};

class JsonlFormat final : public PartFormat {
 public:
  JsonlFormat(Render line, std::string prefix)
      : line_(std::move(line)), prefix_(std::move(prefix)) {}
  std::string part_name(std::uint64_t sequence, const SinkRoot&) const override {
    return fmt::format("{}-{:05}.jsonl", prefix_, sequence);
  }
  std::unique_ptr<PartWriter> open(const std::string& path) const override {
    return std::make_unique<JsonlWriter>(path, line_);
  }

 private:
  Render line_;
  std::string prefix_;
};

class WholeFileWriter final : public FilePartWriter {
 public:
  WholeFileWriter(std::string path, const Render& contents)
      : FilePartWriter(std::move(path)), contents_(contents) {}
  void write(const SinkRoot& root) override {
    contents_(root, buffer());
    appended();
  }

 private:
  const Render& contents_;
};

class FilePerRootFormat final : public PartFormat {
 public:
  FilePerRootFormat(std::function<std::string(const SinkRoot&)> name, Render contents)
      : name_(std::move(name)), contents_(std::move(contents)) {}
  std::string part_name(std::uint64_t, const SinkRoot& first) const override {
    return name_(first);
  }
  std::size_t max_rows() const override { return 1; }
  std::unique_ptr<PartWriter> open(const std::string& path) const override {
    return std::make_unique<WholeFileWriter>(path, contents_);
  }

 private:
  std::function<std::string(const SinkRoot&)> name_;
  Render contents_;
};

}  // namespace

std::shared_ptr<const PartFormat> jsonl_parts(Render line, std::string prefix) {
  if (!line) throw std::invalid_argument("jsonl_parts: the line function is empty");
  if (prefix.empty() || prefix.find('/') != std::string::npos ||
      prefix.find(kAtomicTemporaryInfix) != std::string::npos) {
    throw std::invalid_argument(fmt::format(
        "jsonl_parts: prefix '{}' cannot name a part: give a plain file name (no '/')", prefix));
  }
  return std::make_shared<JsonlFormat>(std::move(line), std::move(prefix));
}

std::shared_ptr<const PartFormat> file_per_root(std::function<std::string(const SinkRoot&)> name,
                                                Render contents) {
  if (!name || !contents) {
    throw std::invalid_argument("file_per_root: the name and contents functions must be set");
  }
  return std::make_shared<FilePerRootFormat>(std::move(name), std::move(contents));
}

}  // namespace rayorch
