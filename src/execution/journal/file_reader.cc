// Reads an open journal file. See file_reader.h.
#include "execution/journal/file_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "rayorch/codec.h"

#include "execution/journal/format.h"

namespace rayorch::detail {

namespace {

using namespace journal_format;

std::string read_all(int fd, const std::string& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw std::invalid_argument(
        fmt::format("RunOptions.journal.path '{}' is not a regular file", path));
  }
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw std::invalid_argument(
          fmt::format("RunOptions.journal.path '{}' cannot be read: {}", path,
                      n < 0 ? errno_text() : std::string("unexpected end of file")));
    }
    got += static_cast<std::size_t>(n);
  }
  return bytes;
}

// A part whose root records are being read: they count once the last one is.
struct OpenPart {
  PartRecord record;
  std::vector<std::pair<std::string, JournalEntry>> roots;
};

// Commits `part`: a part of the same name committed before loses its roots (a rerun wrote
// the name again, for other roots), then this part's roots count.
void commit_part(OpenPart& part, JournalContents& out) {
  if (out.parts.count(part.record.name) != 0) {
    std::erase_if(out.entries, [&](const auto& e) { return e.second.part == part.record.name; });
  }
  for (auto& [key, entry] : part.roots) {
    entry.part = part.record.name;
    out.entries[std::move(key)] = std::move(entry);
  }
  out.parts[part.record.name] = {part.record.sequence, part.record.roots};
  out.uncommitted.erase(part.record.name);
}

// Parses records up to the first one that does not hold; returns the bytes they cover. A
// part's group (its part record and root records, appended together) that the file ends
// inside, or that another record interrupts, is a torn tail too: the bytes covered end
// before its part record.
std::size_t parse(std::string_view bytes, const std::string& path, JournalContents& out) {
  std::size_t good = 0;
  std::string_view rest = bytes;
  std::optional<OpenPart> part;
  std::size_t part_start = 0;
  while (rest.size() >= kFrame) {
    std::string_view frame = rest;
    const auto length = get_le<std::uint32_t>(frame, "a record length");
    const auto sum = get_le<std::uint32_t>(frame, "a record checksum");
    if (frame.size() < length) break;
    const std::string_view payload = frame.substr(0, length);
    if (crc32(payload) != sum || payload.empty()) break;
    try {
      const std::string_view in = payload.substr(1);
      if (payload[0] == kHeader) {
        const std::optional<Header> h = decode_header(in);
        if (!h) break;
        if (h->version < kOldestVersion || h->version > kVersion) {
          throw std::invalid_argument(fmt::format(
              "RunOptions.journal.path '{}' has journal version {}, which this version of "
              "rayorch cannot read (it reads {} to {}); use another journal path",
              path, h->version, kOldestVersion, kVersion));
        }
        if (part) break;  // a part's root records come together
        out.plan_fingerprint = h->plan_fingerprint;
        out.inputs_digest = h->inputs_digest;
        out.version = h->version;
        out.have_header = true;
      } else if (payload[0] == kRoot && out.have_header) {
        auto [key, entry] = decode_root(in);
        if (part) {
          part->roots.emplace_back(std::move(key), std::move(entry));
          if (part->roots.size() == part->record.roots) {
            commit_part(*part, out);
            part.reset();
          }
        } else {
          out.entries[std::move(key)] = std::move(entry);
        }
      } else if (payload[0] == kIntent && out.have_header && !part) {
        out.uncommitted.insert(decode_intent(in));
      } else if (payload[0] == kPart && out.have_header && !part) {
        PartRecord record = decode_part(in);
        if (record.roots == 0) break;
        part.emplace(OpenPart{std::move(record), {}});
        part_start = good;
      } else {
        break;
      }
    } catch (const DecodeError&) {
      break;
    }
    good += kFrame + length;
    rest = bytes.substr(good);
  }
  return part ? part_start : good;
}

}  // namespace

JournalContents read_journal_file(int fd, const std::string& path) {
  const std::string bytes = read_all(fd, path);
  JournalContents out;
  const std::size_t good = parse(bytes, path, out);
  if (good < bytes.size()) {
    out.discarded_bytes = bytes.size() - good;
    if (::ftruncate(fd, static_cast<off_t>(good)) != 0) {
      throw std::invalid_argument(fmt::format(
          "RunOptions.journal.path '{}': cannot cut its torn tail: {}", path, errno_text()));
    }
    std::fprintf(stderr,
                 "rayorch: journal '%s': ignored a torn or corrupt tail of %llu bytes after "
                 "the last good record (offset %zu); its roots run again\n",
                 path.c_str(), static_cast<unsigned long long>(out.discarded_bytes), good);
  }
  if (::lseek(fd, static_cast<off_t>(good), SEEK_SET) < 0) {
    throw std::invalid_argument(
        fmt::format("RunOptions.journal.path '{}': {}", path, errno_text()));
  }
  return out;
}

}  // namespace rayorch::detail
