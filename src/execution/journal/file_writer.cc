// Appends committed journal records from a writer thread. See file_writer.h.
#include "execution/journal/file_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <fmt/format.h>

#include "rayorch/errors.h"

#include "execution/journal/format.h"

namespace rayorch::detail {

namespace {

// The writer thread writes a group once this much waits (or write_interval passed).
constexpr std::size_t kGroupBytes = 64 * 1024;

}  // namespace

JournalFileWriter::JournalFileWriter(UniqueFd file, const JournalOptions& options,
                                     std::string_view first)
    : options_(options), file_(std::move(file)) {
  if (options_.sync_every_records == 0) options_.sync_every_records = 1;
  if (!first.empty()) write_all(first);
  last_sync_ = std::chrono::steady_clock::now();
  writer_ = std::thread([this] { writer_loop(); });
}

JournalFileWriter::~JournalFileWriter() {
  try {
    finish();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rayorch: %s\n", e.what());
  }
}

void JournalFileWriter::commit(std::string_view records_bytes, std::size_t records) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (failed_.load(std::memory_order_relaxed)) throw ExecutionError(error_);
    // The writer sleeps while nothing waits, and waits for a fuller group otherwise: wake
    // it for the first record of a group and when the group is big enough to write.
    wake = pending_.empty() ||
           (pending_.size() < kGroupBytes && pending_.size() + records_bytes.size() >= kGroupBytes);
    pending_.append(records_bytes);
    pending_records_ += records;
  }
  if (wake) wake_.notify_one();
}

void JournalFileWriter::sync() {
  {
    std::unique_lock lock(mutex_);
    sync_asked_ = true;
    wake_.notify_one();
    written_.wait(lock, [&] {
      return failed_.load(std::memory_order_relaxed) || (pending_.empty() && !writing_now_) ||
             !writer_.joinable();
    });
    sync_asked_ = false;
    if (failed_.load(std::memory_order_relaxed)) throw ExecutionError(error_);
  }
  if (::fdatasync(file_.get()) != 0) {
    throw ExecutionError(fmt::format("run journal '{}': flushing to disk failed: {}", options_.path,
                                     journal_format::errno_text()));
  }
}

void JournalFileWriter::writer_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    if (!stop_ && !sync_asked_ && pending_.size() < kGroupBytes) {
      wake_.wait_for(lock, options_.write_interval,
                     [&] { return stop_ || sync_asked_ || pending_.size() >= kGroupBytes; });
    }
    if (pending_.empty()) {
      if (stop_) return;
      continue;
    }
    writing_.swap(pending_);
    const std::size_t records = pending_records_;
    pending_records_ = 0;
    writing_now_ = true;
    lock.unlock();
    std::string error;
    try {
      journal_format::fill_checksums(writing_);
      write_all(writing_);
      unsynced_ += records;
      if (unsynced_ >= options_.sync_every_records ||
          std::chrono::steady_clock::now() - last_sync_ >= options_.sync_interval) {
        sync_file();
      }
    } catch (const ExecutionError& e) {
      error = e.what();
    }
    writing_.clear();
    lock.lock();
    writing_now_ = false;
    if (!error.empty() && !failed_.load(std::memory_order_relaxed)) {
      error_ = std::move(error);
      failed_.store(true, std::memory_order_relaxed);
    }
    if (failed_.load(std::memory_order_relaxed)) {
      // Nothing more reaches the file after a failed write: a gap would lose a record the
      // caller believes written; the run learns of it at its next commit.
      pending_.clear();
      pending_records_ = 0;
    }
    written_.notify_all();
  }
}

void JournalFileWriter::write_all(std::string_view bytes) {
  std::size_t put = 0;
  while (put < bytes.size()) {
    const ssize_t n = ::write(file_.get(), bytes.data() + put, bytes.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw ExecutionError(fmt::format("run journal '{}': a record could not be written: {}",
                                       options_.path, journal_format::errno_text()));
    }
    put += static_cast<std::size_t>(n);
  }
}

void JournalFileWriter::sync_file() {
  if (::fdatasync(file_.get()) != 0) {
    throw ExecutionError(fmt::format("run journal '{}': flushing to disk failed: {}", options_.path,
                                     journal_format::errno_text()));
  }
  unsynced_ = 0;
  last_sync_ = std::chrono::steady_clock::now();
}

void JournalFileWriter::finish() {
  if (writer_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    writer_.join();  // it writes what is pending before it returns
    if (failed_.load()) throw ExecutionError(error_);
    sync_file();
  }
}

}  // namespace rayorch::detail
