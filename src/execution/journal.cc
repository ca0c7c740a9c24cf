// The run journal and dead letters. See rayorch/journal.h and rayorch/detail/journal.h.
#include "rayorch/detail/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rayorch/codec.h"
#include "rayorch/detail/byte_order.h"
#include "rayorch/errors.h"
#include "rayorch/executor.h"

namespace rayorch::detail {

namespace {

constexpr std::string_view kMagic = "rayorch-journal";
constexpr std::uint32_t kVersion = 1;
constexpr char kHeader = 'H';
constexpr char kRoot = 'R';
constexpr std::size_t kFrame = 8;  // u32 length + u32 crc
// The writer thread writes a group once this much waits (or write_interval passed).
constexpr std::size_t kGroupBytes = 64 * 1024;

std::string errno_text() {
  return std::strerror(errno);
}

std::optional<IssueOrigin> decode_origin(std::string_view& in) {
  if (!Codec<bool>::decode(in)) return std::nullopt;
  IssueOrigin o;
  o.call = Codec<std::string>::decode(in);
  o.call_index = Codec<std::int32_t>::decode(in);
  o.entity = Codec<std::string>::decode(in);
  o.attempts = Codec<std::uint32_t>::decode(in);
  return o;
}

Outcome decode_outcome(std::string_view& in) {
  const auto v = Codec<std::uint8_t>::decode(in);
  if (v > static_cast<std::uint8_t>(Outcome::suppressed)) throw DecodeError("bad outcome");
  return static_cast<Outcome>(v);
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t h) {
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = kDigits[v & 0xF];
  return out;
}

std::uint32_t crc32(std::string_view bytes) {
  // Slicing-by-8: eight table lookups per 8 bytes.
  using Tables = std::array<std::array<std::uint32_t, 256>, 8>;
  static const Tables t = [] {
    Tables x{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320U ^ (c >> 1) : c >> 1;
      x[0][i] = c;
    }
    for (std::size_t k = 1; k < 8; ++k) {
      for (std::uint32_t i = 0; i < 256; ++i)
        x[k][i] = (x[k - 1][i] >> 8) ^ x[0][x[k - 1][i] & 0xFF];
    }
    return x;
  }();
  std::uint32_t c = 0xFFFFFFFFU;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t n = bytes.size();
  while (n >= 8) {
    const std::uint32_t lo =
        c ^ (static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
             static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24);
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFU;
}

Outcome JournalEntry::outcome() const {
  for (const JournalPort& p : ports) {
    if (p.outcome != Outcome::present) return p.outcome;
  }
  return Outcome::present;
}

RunJournal::RunJournal(const JournalOptions& options, std::uint64_t plan_fingerprint,
                       std::uint64_t inputs_digest)
    : options_(options), last_sync_(std::chrono::steady_clock::now()) {
  if (options_.sync_every_records == 0) options_.sync_every_records = 1;
  fd_ = ::open(options_.path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::invalid_argument(fmt::format(
        "RunOptions.journal.path '{}' cannot be opened for writing: {}; choose a file in a "
        "writable directory (checked before any input is admitted)",
        options_.path, errno_text()));
  }
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      throw std::invalid_argument(
          fmt::format("RunOptions.journal.path '{}' is not a regular file", options_.path));
    }
    std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t n =
          ::pread(fd_, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        throw std::invalid_argument(
            fmt::format("RunOptions.journal.path '{}' cannot be read: {}", options_.path,
                        n < 0 ? errno_text() : std::string("unexpected end of file")));
      }
      got += static_cast<std::size_t>(n);
    }
    // Parse records up to the first one that does not hold.
    std::size_t good = 0;
    bool have_header = false;
    std::uint64_t file_plan = 0;
    std::uint64_t file_inputs = 0;
    std::string_view rest = bytes;
    while (rest.size() >= kFrame) {
      std::string_view frame = rest;
      const auto length = detail::get_le<std::uint32_t>(frame, "a record length");
      const auto sum = detail::get_le<std::uint32_t>(frame, "a record checksum");
      if (frame.size() < length) break;
      const std::string_view payload = frame.substr(0, length);
      if (crc32(payload) != sum || payload.empty()) break;
      try {
        std::string_view in = payload.substr(1);
        if (payload[0] == kHeader) {
          if (Codec<std::string>::decode(in) != kMagic) break;
          if (Codec<std::uint32_t>::decode(in) != kVersion) {
            throw std::invalid_argument(fmt::format(
                "RunOptions.journal.path '{}' has an unsupported journal version", options_.path));
          }
          file_plan = Codec<std::uint64_t>::decode(in);
          file_inputs = Codec<std::uint64_t>::decode(in);
          have_header = true;
        } else if (payload[0] == kRoot && have_header) {
          std::string key = Codec<std::string>::decode(in);
          JournalEntry e;
          const auto n = Codec<std::uint32_t>::decode(in);
          for (std::uint32_t k = 0; k < n; ++k) {
            JournalPort p;
            p.outcome = decode_outcome(in);
            p.cause = Codec<std::string>::decode(in);
            p.origin = decode_origin(in);
            p.value = Codec<std::string>::decode(in);
            e.ports.push_back(std::move(p));
          }
          entries_[std::move(key)] = std::move(e);
        } else {
          break;
        }
      } catch (const DecodeError&) {
        break;
      }
      good += kFrame + length;
      rest = std::string_view(bytes).substr(good);
    }
    if (good < bytes.size()) {
      discarded_ = bytes.size() - good;
      if (::ftruncate(fd_, static_cast<off_t>(good)) != 0) {
        throw std::invalid_argument(
            fmt::format("RunOptions.journal.path '{}': cannot cut its "
                        "torn tail: {}",
                        options_.path, errno_text()));
      }
      std::fprintf(stderr,
                   "rayorch: journal '%s': ignored a torn or corrupt tail of %llu bytes after "
                   "the last good record (offset %zu); its roots run again\n",
                   options_.path.c_str(), static_cast<unsigned long long>(discarded_), good);
    }
    if (::lseek(fd_, static_cast<off_t>(good), SEEK_SET) < 0) {
      throw std::invalid_argument(
          fmt::format("RunOptions.journal.path '{}': {}", options_.path, errno_text()));
    }
    bool write_header = !have_header;
    if (have_header && (file_plan != plan_fingerprint || file_inputs != inputs_digest)) {
      const bool accepted =
          options_.force || (file_plan == plan_fingerprint && options_.allow_other_inputs);
      if (!accepted) {
        throw std::invalid_argument(fmt::format(
            "RunOptions.journal.path '{}' was written for {} (journal {}, this run {}); use "
            "another journal path, or set journal.{} to use its records anyway",
            options_.path,
            file_plan != plan_fingerprint ? "another pipeline (plan fingerprint)"
                                          : "other inputs (digest of the source row keys)",
            hex64(file_plan != plan_fingerprint ? file_plan : file_inputs),
            hex64(file_plan != plan_fingerprint ? plan_fingerprint : inputs_digest),
            file_plan != plan_fingerprint ? "force" : "allow_other_inputs (or force)"));
      }
      write_header = true;
    }
    if (write_header) {
      std::string h(1, kHeader);
      Codec<std::string>::encode(std::string(kMagic), h);
      Codec<std::uint32_t>::encode(kVersion, h);
      Codec<std::uint64_t>::encode(plan_fingerprint, h);
      Codec<std::uint64_t>::encode(inputs_digest, h);
      std::string framed;
      detail::put_le(static_cast<std::uint32_t>(h.size()), framed);
      detail::put_le(crc32(h), framed);
      framed.append(h);
      // Not flushed on its own: the first group flush (or the end of the run) takes it along,
      // and a header lost to a power loss only makes the file unreadable as a whole, which
      // runs every root again.
      write_all(framed);
    }
  } catch (const ExecutionError& e) {
    ::close(fd_);
    throw std::invalid_argument(e.what());
  } catch (...) {
    ::close(fd_);
    throw;
  }
  last_sync_ = std::chrono::steady_clock::now();
  writer_ = std::thread([this] { writer_loop(); });
}

RunJournal::~RunJournal() {
  try {
    finish();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rayorch: %s\n", e.what());
  }
  ::close(fd_);
}

const JournalEntry* RunJournal::recorded(const std::string& key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

namespace {

// Little-endian fields written in place: the hot path grows the record once per field group
// instead of once per byte. Returns the end of the field.
template <class T>
char* put_at(char* at, T v) {
  detail::store_le(at, v);
  return at + sizeof(T);
}

char* grow(std::string& out, std::size_t n) {
  const std::size_t at = out.size();
  out.resize(at + n);
  return out.data() + at;
}

}  // namespace

std::string& RunJournal::begin_record(std::string_view key, std::uint32_t ports) {
  record_.clear();
  // The frame (payload length and checksum, filled in by commit() and the writer thread),
  // the record type, the key (u64 length, bytes) and the port count.
  char* at = grow(record_, kFrame + 1 + 8 + key.size() + 4);
  at = put_at<std::uint64_t>(at, 0);
  *at++ = kRoot;
  at = put_at<std::uint64_t>(at, key.size());
  if (!key.empty()) std::memcpy(at, key.data(), key.size());
  put_at<std::uint32_t>(at + key.size(), ports);
  return record_;
}

void RunJournal::put_port(std::string& out, Outcome outcome, std::string_view cause,
                          const std::optional<IssueOrigin>& origin) {
  // Outcome, cause (u64 length, bytes) and whether an origin follows.
  char* at = grow(out, 1 + 8 + cause.size() + 1);
  *at++ = static_cast<char>(outcome);
  at = put_at<std::uint64_t>(at, cause.size());
  if (!cause.empty()) std::memcpy(at, cause.data(), cause.size());
  at[cause.size()] = origin ? '\1' : '\0';
  if (!origin) return;
  Codec<std::string>::encode(origin->call, out);
  Codec<std::int32_t>::encode(origin->call_index, out);
  Codec<std::string>::encode(origin->entity, out);
  Codec<std::uint32_t>::encode(origin->attempts, out);
}

std::size_t RunJournal::begin_value(std::string& out) {
  const std::size_t at = out.size();
  out.resize(at + sizeof(std::uint64_t));
  return at;
}

void RunJournal::end_value(std::string& out, std::size_t at) {
  put_at<std::uint64_t>(out.data() + at, out.size() - at - sizeof(std::uint64_t));
}

void RunJournal::commit() {
  put_at<std::uint32_t>(record_.data(), static_cast<std::uint32_t>(record_.size() - kFrame));
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (failed_.load(std::memory_order_relaxed)) throw ExecutionError(error_);
    // The writer sleeps while nothing waits, and waits for a fuller group otherwise: wake
    // it for the first record of a group and when the group is big enough to write.
    wake = pending_.empty() ||
           (pending_.size() < kGroupBytes && pending_.size() + record_.size() >= kGroupBytes);
    pending_.append(record_);
    ++pending_records_;
  }
  if (wake) wake_.notify_one();
}

void RunJournal::writer_loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    if (!stop_ && pending_.size() < kGroupBytes) {
      wake_.wait_for(lock, options_.write_interval,
                     [&] { return stop_ || pending_.size() >= kGroupBytes; });
    }
    if (pending_.empty()) {
      if (stop_) return;
      continue;
    }
    writing_.swap(pending_);
    const std::size_t records = pending_records_;
    pending_records_ = 0;
    lock.unlock();
    std::string error;
    try {
      write_out(writing_);
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
  }
}

void RunJournal::write_out(std::string& bytes) {
  for (std::size_t at = 0; at + kFrame <= bytes.size();) {
    std::string_view head(bytes.data() + at, 4);
    const auto length = detail::get_le<std::uint32_t>(head, "a record length");
    const std::uint32_t sum = crc32(std::string_view(bytes.data() + at + kFrame, length));
    std::uint32_t v = sum;
    for (std::size_t i = 0; i < 4; ++i, v >>= 8) bytes[at + 4 + i] = static_cast<char>(v & 0xFF);
    at += kFrame + length;
  }
  write_all(bytes);
}

void RunJournal::write_all(std::string_view bytes) {
  std::size_t put = 0;
  while (put < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + put, bytes.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw ExecutionError(fmt::format("run journal '{}': a record could not be written: {}",
                                       options_.path, errno_text()));
    }
    put += static_cast<std::size_t>(n);
  }
}

void RunJournal::sync_file() {
  if (::fdatasync(fd_) != 0) {
    throw ExecutionError(
        fmt::format("run journal '{}': flushing to disk failed: {}", options_.path, errno_text()));
  }
  unsynced_ = 0;
  last_sync_ = std::chrono::steady_clock::now();
}

void RunJournal::finish() {
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

DeadLetterFile::DeadLetterFile(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    throw std::invalid_argument(fmt::format(
        "RunOptions.dead_letters '{}' cannot be opened for writing: {}; choose a file in a "
        "writable directory (checked before any input is admitted)",
        path, errno_text()));
  }
}

DeadLetterFile::~DeadLetterFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void DeadLetterFile::write(const DeadLetter& d) {
  nlohmann::json j;
  for (const auto& [name, value] : d.fields) j[name] = value;
  j["key"] = d.key;
  j["row"] = d.row;
  j["outcome"] = std::string(to_string(d.outcome));
  j["output"] = d.output;
  j["cause"] = d.cause;
  j["call"] = d.origin ? nlohmann::json(d.origin->call) : nlohmann::json(nullptr);
  j["entity"] = d.origin ? nlohmann::json(d.origin->entity) : nlohmann::json(nullptr);
  j["attempts"] = d.origin ? d.origin->attempts : 0U;
  j["restored"] = d.restored;
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    throw ExecutionError(
        fmt::format("dead letters '{}': a line could not be written: {}", path_, errno_text()));
  }
}

namespace {

void dead_letter(DeadLetterFile& file, const RunOptions& options, const std::string& key,
                 std::size_t row, std::span<const ErasedOutput> e, bool restored) {
  for (std::size_t k = 0; k < e.size(); ++k) {
    if (e[k].outcome == Outcome::present) continue;
    DeadLetter d{key,         row,     e[k].outcome, k, e[k].cause ? *e[k].cause : std::string(),
                 e[k].origin, restored};
    if (options.dead_letter_fields) d.fields = options.dead_letter_fields(row);
    file.write(d);
    return;
  }
}

// A root's record: per output its outcome, cause, origin and encoded value, straight into
// the journal's reusable record buffer.
void record_root(RunJournal& journal, const OutputCodec& codec, const std::string& key,
                 std::span<const ErasedOutput> e) {
  std::string& out = journal.begin_record(key, static_cast<std::uint32_t>(e.size()));
  for (std::size_t k = 0; k < e.size(); ++k) {
    RunJournal::put_port(out, e[k].outcome,
                         e[k].cause ? std::string_view(*e[k].cause) : std::string_view(),
                         e[k].origin);
    const std::size_t at = RunJournal::begin_value(out);
    if (e[k].outcome == Outcome::present) codec.encode(k, e[k].value, out);
    RunJournal::end_value(out, at);
  }
  journal.commit();
}

}  // namespace

RunMetrics run_journaled(ExecutionCore& core, SourceData sources,
                         const std::vector<std::string>& keys, const RunOptions& options,
                         const RootSink& sink, const OutputCodec& codec) {
  const std::size_t rows = sources.rows;
  const bool journaled = !options.journal.path.empty();
  if (journaled && !codec.available) {
    throw std::invalid_argument(
        "RunOptions.journal records root outputs, but this run's outputs cannot be encoded");
  }
  if (keys.size() != rows) {
    throw std::invalid_argument(fmt::format(
        "the run journal needs one key per source row: {} keys for {} rows", keys.size(), rows));
  }
  std::optional<RunJournal> journal;
  if (journaled) {
    std::uint64_t digest = fnv1a64("keys");
    for (const std::string& k : keys) {
      // "<decimal length>:" then the key, as journals have always been digested.
      std::array<char, 24> size{};
      char* end = std::to_chars(size.data(), size.data() + size.size() - 1, k.size()).ptr;
      *end++ = ':';
      digest = fnv1a64(
          k, fnv1a64(std::string_view(size.data(), static_cast<std::size_t>(end - size.data())),
                     digest));
    }
    journal.emplace(options.journal, core.plan_fingerprint(), digest);
  }
  std::optional<DeadLetterFile> dead;
  if (!options.dead_letters.empty()) dead.emplace(options.dead_letters);

  // Rows recorded as finished are restored; the others run.
  std::vector<std::size_t> todo;
  std::vector<std::pair<std::size_t, const JournalEntry*>> restored;
  for (std::size_t r = 0; r < rows; ++r) {
    const JournalEntry* e = journal && !journal->empty() ? journal->recorded(keys[r]) : nullptr;
    const bool finished = e != nullptr && e->ports.size() == codec.outputs &&
                          (e->outcome() == Outcome::present || e->outcome() == Outcome::dropped ||
                           !options.journal.retry_failed);
    if (finished) {
      restored.emplace_back(r, e);
    } else {
      todo.push_back(r);
    }
  }
  const bool all = todo.size() == rows;
  if (!all) {
    // The rows to run, as a subset of the same blocks.
    for (auto& column : sources.values) {
      std::vector<const void*> subset;
      subset.reserve(todo.size());
      for (std::size_t r : todo) subset.push_back(column[r]);
      column = std::move(subset);
    }
    sources.rows = todo.size();
    sources.original_rows = todo;
  }
  for (const auto& [r, e] : restored) sources.restored.emplace_back(r, e->outcome());
  // Hands the i-th restored root to the caller (the run calls it after on_run_start).
  sources.deliver_restored = [&](std::size_t i) {
    const auto& [r, e] = restored[i];
    if (dead && e->outcome() != Outcome::present) {
      std::vector<ErasedOutput> issue(e->ports.size());
      for (std::size_t k = 0; k < e->ports.size(); ++k) {
        const JournalPort& p = e->ports[k];
        issue[k] = ErasedOutput{p.outcome, &p.cause, nullptr, p.origin};
      }
      dead_letter(*dead, options, keys[r], r, issue, true);
    }
    codec.restore(r, *e, sink);
  };
  sources.journal_discarded_bytes = journal ? journal->discarded_bytes() : 0;
  const RootSink wrapped = [&](std::size_t row, std::span<const ErasedOutput> e) {
    const std::size_t original = all ? row : todo[row];
    sink(original, e);  // delivered first: a recorded root was received by the caller
    if (journal) record_root(*journal, codec, keys[original], e);
    if (dead) dead_letter(*dead, options, keys[original], original, e, false);
  };
  RunMetrics m = core.run(std::move(sources), options, wrapped);
  if (!all) {
    std::vector<double> seconds(rows, 0.0);
    for (std::size_t i = 0; i < todo.size() && i < m.root_completed_seconds.size(); ++i) {
      seconds[todo[i]] = m.root_completed_seconds[i];
    }
    m.root_completed_seconds = std::move(seconds);
  }
  if (journal) journal->finish();
  return m;
}

}  // namespace rayorch::detail
