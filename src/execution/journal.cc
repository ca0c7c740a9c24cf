// The run journal and dead letters. See rayorch/journal.h and rayorch/detail/journal.h.
#include "rayorch/detail/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "rayorch/codec.h"
#include "rayorch/errors.h"

namespace rayorch::detail {

namespace {

constexpr std::string_view kMagic = "rayorch-journal";
constexpr std::uint32_t kVersion = 1;
constexpr char kHeader = 'H';
constexpr char kRoot = 'R';
constexpr std::size_t kFrame = 8;  // u32 length + u32 crc

std::string errno_text() {
  return std::strerror(errno);
}

void encode_origin(const std::optional<IssueOrigin>& o, std::string& out) {
  Codec<bool>::encode(o.has_value(), out);
  if (!o) return;
  Codec<std::string>::encode(o->call, out);
  Codec<std::int32_t>::encode(o->call_index, out);
  Codec<std::string>::encode(o->entity, out);
  Codec<std::uint32_t>::encode(o->attempts, out);
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
  return fmt::format("{:016x}", v);
}

std::uint32_t crc32(std::string_view bytes) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320U ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFU;
  for (char ch : bytes) c = table[(c ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (c >> 8);
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
      if (!options_.force) {
        throw std::invalid_argument(fmt::format(
            "RunOptions.journal.path '{}' was written for {} (journal {}, this run {}); use "
            "another journal path, or set journal.force to use its records anyway",
            options_.path,
            file_plan != plan_fingerprint ? "another pipeline (plan fingerprint)"
                                          : "other inputs (digest of the source row keys)",
            hex64(file_plan != plan_fingerprint ? file_plan : file_inputs),
            hex64(file_plan != plan_fingerprint ? plan_fingerprint : inputs_digest)));
      }
      write_header = true;
    }
    if (write_header) {
      std::string h(1, kHeader);
      Codec<std::string>::encode(std::string(kMagic), h);
      Codec<std::uint32_t>::encode(kVersion, h);
      Codec<std::uint64_t>::encode(plan_fingerprint, h);
      Codec<std::uint64_t>::encode(inputs_digest, h);
      write_record(h);
      sync();
    }
  } catch (const ExecutionError& e) {
    ::close(fd_);
    throw std::invalid_argument(e.what());
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

RunJournal::~RunJournal() {
  if (fd_ < 0) return;
  if (unsynced_ > 0) ::fdatasync(fd_);
  ::close(fd_);
}

const JournalEntry* RunJournal::recorded(const std::string& key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void RunJournal::write_record(const std::string& payload) {
  std::string rec;
  rec.reserve(kFrame + payload.size());
  detail::put_le(static_cast<std::uint32_t>(payload.size()), rec);
  detail::put_le(crc32(payload), rec);
  rec.append(payload);
  std::size_t put = 0;
  while (put < rec.size()) {
    const ssize_t n = ::write(fd_, rec.data() + put, rec.size() - put);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw ExecutionError(fmt::format("run journal '{}': a record could not be written: {}",
                                       options_.path, errno_text()));
    }
    put += static_cast<std::size_t>(n);
  }
  ++unsynced_;
}

void RunJournal::append(const std::string& key, std::span<const JournalPort> ports) {
  std::string r(1, kRoot);
  Codec<std::string>::encode(key, r);
  Codec<std::uint32_t>::encode(static_cast<std::uint32_t>(ports.size()), r);
  for (const JournalPort& p : ports) {
    Codec<std::uint8_t>::encode(static_cast<std::uint8_t>(p.outcome), r);
    Codec<std::string>::encode(p.cause, r);
    encode_origin(p.origin, r);
    Codec<std::string>::encode(p.value, r);
  }
  write_record(r);
  if (unsynced_ >= options_.sync_every_records ||
      std::chrono::steady_clock::now() - last_sync_ >= options_.sync_interval) {
    sync();
  }
}

void RunJournal::sync() {
  if (::fdatasync(fd_) != 0) {
    throw ExecutionError(
        fmt::format("run journal '{}': flushing to disk failed: {}", options_.path, errno_text()));
  }
  unsynced_ = 0;
  last_sync_ = std::chrono::steady_clock::now();
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

}  // namespace rayorch::detail
