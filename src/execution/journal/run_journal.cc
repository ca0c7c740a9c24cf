// An open run journal. See run_journal.h.
#include "execution/journal/run_journal.h"

#include <fcntl.h>

#include <stdexcept>
#include <utility>

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
    parts_ = std::move(contents.parts);
    uncommitted_ = std::move(contents.uncommitted);
    discarded_ = contents.discarded_bytes;
    // The header is not flushed on its own: the first group flush (or the end of the run)
    // takes it along, and a header lost to a power loss only makes the file unreadable as
    // a whole, which runs every root again.
    // An older version's header is followed by this version's, so that a reader of that
    // version stops before records it does not know instead of taking them for a torn tail.
    const bool header = check_header(contents, options, plan_fingerprint, inputs_digest) ||
                        contents.version < journal_format::kVersion;
    writer_.emplace(
        std::move(file), options,
        header ? journal_format::header_record(plan_fingerprint, inputs_digest) : std::string());
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

void RunJournal::hold() {
  journal_format::end_root_record(record_);
  held_.append(record_);
  ++held_roots_;
}

void RunJournal::record_intent(std::string_view name) {
  writer_->commit(journal_format::intent_record(name));
  writer_->sync();
}

std::size_t RunJournal::commit_part(std::string_view name, std::uint64_t sequence) {
  std::string group;
  group.reserve(held_.size() + 64);
  journal_format::put_part_record(group, name, sequence, held_roots_);
  group.append(held_);
  writer_->commit(group, held_roots_ + 1);
  const std::size_t roots = std::exchange(held_roots_, 0);
  held_.clear();
  return roots;
}

void RunJournal::forget_part(const std::string& name) {
  std::erase_if(entries_, [&](const auto& e) { return e.second.part == name; });
  parts_.erase(name);
}

}  // namespace rayorch::detail
