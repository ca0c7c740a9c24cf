// An open run journal. See run_journal.h.
#include "execution/journal/run_journal.h"

#include <fcntl.h>

#include <stdexcept>

#include <fmt/format.h>

#include "rayorch/errors.h"

#include "execution/journal/file_reader.h"
#include "execution/journal/format.h"

namespace rayorch::detail {

namespace {

// Throws unless a journal written with `file` fingerprints may serve this run; returns
// whether this run's header must be appended (none yet, or a different one accepted).
bool check_header(const JournalContents& file, const JournalOptions& options,
                  std::uint64_t plan_fingerprint, std::uint64_t inputs_digest) {
  if (!file.have_header) return true;
  if (file.plan_fingerprint == plan_fingerprint && file.inputs_digest == inputs_digest) {
    return false;
  }
  const bool other_plan = file.plan_fingerprint != plan_fingerprint;
  const bool accepted = options.force || (!other_plan && options.allow_other_inputs);
  if (!accepted) {
    throw std::invalid_argument(fmt::format(
        "RunOptions.journal.path '{}' was written for {} (journal {}, this run {}); use "
        "another journal path, or set journal.{} to use its records anyway",
        options.path,
        other_plan ? "another pipeline (plan fingerprint)"
                   : "other inputs (digest of the source row keys)",
        hex64(other_plan ? file.plan_fingerprint : file.inputs_digest),
        hex64(other_plan ? plan_fingerprint : inputs_digest),
        other_plan ? "force" : "allow_other_inputs (or force)"));
  }
  return true;
}

}  // namespace

RunJournal::RunJournal(const JournalOptions& options, std::uint64_t plan_fingerprint,
                       std::uint64_t inputs_digest) {
  UniqueFd file(::open(options.path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (file.get() < 0) {
    throw std::invalid_argument(fmt::format(
        "RunOptions.journal.path '{}' cannot be opened for writing: {}; choose a file in a "
        "writable directory (checked before any input is admitted)",
        options.path, journal_format::errno_text()));
  }
  try {
    JournalContents contents = read_journal_file(file.get(), options.path);
    entries_ = std::move(contents.entries);
    discarded_ = contents.discarded_bytes;
    // The header is not flushed on its own: the first group flush (or the end of the run)
    // takes it along, and a header lost to a power loss only makes the file unreadable as
    // a whole, which runs every root again.
    const std::string header = check_header(contents, options, plan_fingerprint, inputs_digest)
                                   ? journal_format::header_record(plan_fingerprint, inputs_digest)
                                   : std::string();
    writer_.emplace(std::move(file), options, header);
  } catch (const ExecutionError& e) {
    throw std::invalid_argument(e.what());
  }
}

const JournalEntry* RunJournal::recorded(const std::string& key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

std::string& RunJournal::begin_record(std::string_view key, std::uint32_t ports) {
  journal_format::begin_root_record(record_, key, ports);
  return record_;
}

void RunJournal::commit() {
  journal_format::end_root_record(record_);
  writer_->commit(record_);
}

}  // namespace rayorch::detail
