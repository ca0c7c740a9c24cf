// Feeds a sink and commits its parts with the journal. See part_committer.h.
#include "execution/sink/part_committer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "rayorch/atomic_file.h"
#include "rayorch/errors.h"

#include "execution/journal/run_journal.h"

namespace rayorch::detail {

namespace fs = std::filesystem;

namespace {

// The temporary a part is written under: hidden, and one that remove_atomic_temporaries
// recognises.
std::string temporary_name(const std::string& name) {
  return fmt::format(".{}{}part", name, kAtomicTemporaryInfix);
}

// A plain file name that is not the sink's own (the manifest, the marker, a temporary).
bool is_part_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos && name != kManifestName && name != kSuccessName &&
         name.find(kAtomicTemporaryInfix) == std::string::npos;
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    throw ExecutionError(
        fmt::format("sink: cannot open directory '{}': {}", dir, std::strerror(errno)));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) {
    throw ExecutionError(
        fmt::format("sink: cannot flush directory '{}' to disk: {}", dir, std::strerror(err)));
  }
}

// Removes `path` when it exists; returns whether it did.
bool remove_file(const fs::path& path) {
  std::error_code ec;
  const bool removed = fs::remove(path, ec);
  if (ec) {
    throw std::invalid_argument(fmt::format(
        "RunOptions.sink.directory: cannot remove '{}', which an interrupted or earlier run "
        "left: {}",
        path.string(), ec.message()));
  }
  return removed;
}

void check_options(const SinkOptions& options) {
  if (!options.format) {
    throw std::invalid_argument(
        "RunOptions.sink.format is not set: give the sink a part format (rayorch::jsonl_parts, "
        "rayorch::file_per_root, or your own PartFormat)");
  }
  if (options.rows_per_part == 0) {
    throw std::invalid_argument(
        "RunOptions.sink.rows_per_part is 0: a part holds at least one root");
  }
  if (options.bytes_per_part == 0) {
    throw std::invalid_argument("RunOptions.sink.bytes_per_part is 0: give a part a size > 0");
  }
}

// Creates the directory and checks that a file can be created in it.
void check_directory(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw std::invalid_argument(fmt::format(
        "RunOptions.sink.directory '{}' cannot be created: {}; choose a writable location "
        "(checked before any input is admitted)",
        dir, ec ? ec.message() : std::string("it is not a directory")));
  }
  const std::string probe = (fs::path(dir) / temporary_name("probe")).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::invalid_argument(fmt::format(
        "RunOptions.sink.directory '{}' is not writable: {}; choose a writable location "
        "(checked before any input is admitted)",
        dir, std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace

PartCommitter::PartCommitter(const SinkOptions& options, RunJournal* journal, bool journal_is_new)
    : options_(options), rows_per_part_(options.rows_per_part), journal_(journal) {
  check_options(options_);
  if (const std::size_t cap = options_.format->max_rows(); cap != 0) {
    rows_per_part_ = std::min(rows_per_part_, cap);
  }
  check_directory(options_.directory);
  const std::vector<ManifestPart> listed = read_manifest(options_.directory);
  // A reader must not trust the directory while this run changes it.
  remove_file(path_of(kSuccessName));
  remove_file(path_of(kManifestName));
  const std::size_t temporaries = remove_atomic_temporaries(options_.directory);
  std::size_t uncommitted = 0;
  if (journal_ != nullptr && !journal_is_new) {
    for (const std::string& name : journal_->uncommitted()) {
      uncommitted += remove_file(path_of(name)) ? 1 : 0;
    }
    for (const auto& [name, part] : journal_->parts()) {
      next_sequence_ = std::max(next_sequence_, part.sequence + 1);
      // A committed part whose file is gone: its roots are staged again when restored.
      if (fs::exists(path_of(name))) committed_[name] = {name, part.sequence, part.roots};
    }
  }
  std::size_t earlier = 0;
  for (const ManifestPart& p : listed) {
    if (committed_.count(p.name) == 0) earlier += remove_file(path_of(p.name)) ? 1 : 0;
  }
  removed_ = temporaries + uncommitted + earlier;
  if (temporaries + uncommitted > 0) {
    std::fprintf(stderr,
                 "rayorch: sink '%s': removed what an interrupted run left: %zu uncommitted "
                 "part(s), %zu temporary file(s); their roots run again\n",
                 options_.directory.c_str(), uncommitted, temporaries);
  }
  if (earlier > 0) {
    std::fprintf(stderr,
                 "rayorch: sink '%s': removed %zu part(s) of an earlier output (this run's "
                 "journal is new)\n",
                 options_.directory.c_str(), earlier);
  }
}

PartCommitter::~PartCommitter() {
  abandon();
}

std::string PartCommitter::path_of(const std::string& name) const {
  return (fs::path(options_.directory) / name).string();
}

bool PartCommitter::in_place(const JournalEntry& entry) const {
  return !entry.part.empty() && committed_.count(entry.part) != 0;
}

void PartCommitter::stage(const SinkRoot& root) {
  if (!writer_) {
    std::string name = options_.format->part_name(next_sequence_, root);
    if (!is_part_name(name)) {
      throw ExecutionError(fmt::format(
          "sink: the part format named a part '{}' (for the root with key '{}'): a part's name "
          "is a plain file name other than {} and {}, without '{}'",
          name, root.key, kManifestName, kSuccessName, kAtomicTemporaryInfix));
    }
    if (committed_this_run_.count(name) != 0) {
      throw ExecutionError(fmt::format(
          "sink: part '{}' was committed earlier in this run and the root with key '{}' would "
          "replace it: give each root's part its own name",
          name, root.key));
    }
    temporary_ = path_of(temporary_name(name));
    writer_ = options_.format->open(temporary_);
    name_ = std::move(name);
    rows_ = 0;
    opened_at_ = std::chrono::steady_clock::now();
  }
  writer_->write(root);
  ++rows_;
}

void PartCommitter::roll_if_due() {
  if (!writer_) return;
  const bool full = rows_ >= rows_per_part_ || writer_->bytes() >= options_.bytes_per_part;
  const bool old = options_.max_part_age.count() > 0 &&
                   std::chrono::steady_clock::now() - opened_at_ >= options_.max_part_age;
  if (full || old) commit();
}

void PartCommitter::commit() {
  if (!writer_) return;
  writer_->finish();
  writer_.reset();
  if (journal_ != nullptr) journal_->record_intent(name_);
  const std::string target = path_of(name_);
  if (::rename(temporary_.c_str(), target.c_str()) != 0) {
    throw ExecutionError(
        fmt::format("sink: cannot move part '{}' into place: {}", target, std::strerror(errno)));
  }
  temporary_.clear();
  sync_directory(options_.directory);
  if (journal_ != nullptr) journal_->commit_part(name_, next_sequence_);
  committed_[name_] = {name_, next_sequence_, rows_};
  committed_this_run_.insert(name_);
  ++next_sequence_;
  rows_ = 0;
}

void PartCommitter::abandon() noexcept {
  writer_.reset();
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
  temporary_.clear();
  if (journal_ != nullptr) journal_->drop_held();
  rows_ = 0;
}

void PartCommitter::write_manifest(bool complete) const {
  std::vector<ManifestPart> parts;
  parts.reserve(committed_.size());
  for (const auto& [name, part] : committed_) parts.push_back(part);
  detail::write_manifest(options_.directory, std::move(parts), complete);
}

}  // namespace rayorch::detail
