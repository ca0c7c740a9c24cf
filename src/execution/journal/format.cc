// The run journal's file format and the hashing it shares with the driver. See format.h.
#include "execution/journal/format.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "rayorch/codec.h"
#include "rayorch/detail/byte_order.h"

namespace rayorch::detail {

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

namespace journal_format {

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

std::string header_record(std::uint64_t plan_fingerprint, std::uint64_t inputs_digest) {
  std::string h(1, kHeader);
  Codec<std::string>::encode(std::string(kMagic), h);
  Codec<std::uint32_t>::encode(kVersion, h);
  Codec<std::uint64_t>::encode(plan_fingerprint, h);
  Codec<std::uint64_t>::encode(inputs_digest, h);
  std::string framed;
  put_le(static_cast<std::uint32_t>(h.size()), framed);
  put_le(crc32(h), framed);
  framed.append(h);
  return framed;
}

std::string intent_record(std::string_view part) {
  std::string out(kFrame, '\0');
  out.push_back(kIntent);
  Codec<std::string>::encode(std::string(part), out);
  put_at<std::uint32_t>(out.data(), static_cast<std::uint32_t>(out.size() - kFrame));
  return out;
}

void put_part_record(std::string& out, std::string_view part, std::uint64_t sequence,
                     std::uint64_t roots) {
  const std::size_t at = out.size();
  out.resize(at + kFrame);
  out.push_back(kPart);
  Codec<std::string>::encode(std::string(part), out);
  Codec<std::uint64_t>::encode(sequence, out);
  Codec<std::uint64_t>::encode(roots, out);
  put_at<std::uint32_t>(out.data() + at, static_cast<std::uint32_t>(out.size() - at - kFrame));
  put_at<std::uint32_t>(out.data() + at + 4, 0);
}

PartRecord decode_part(std::string_view in) {
  PartRecord p;
  p.name = Codec<std::string>::decode(in);
  p.sequence = Codec<std::uint64_t>::decode(in);
  p.roots = Codec<std::uint64_t>::decode(in);
  return p;
}

std::string decode_intent(std::string_view in) {
  return Codec<std::string>::decode(in);
}

void begin_root_record(std::string& out, std::string_view key, std::uint32_t ports) {
  out.clear();
  // The frame (payload length and checksum, filled in by end_root_record and
  // fill_checksums), the record type, the key (u64 length, bytes) and the port count.
  char* at = grow(out, kFrame + 1 + 8 + key.size() + 4);
  at = put_at<std::uint64_t>(at, 0);
  *at++ = kRoot;
  at = put_at<std::uint64_t>(at, key.size());
  if (!key.empty()) std::memcpy(at, key.data(), key.size());
  put_at<std::uint32_t>(at + key.size(), ports);
}

void put_port(std::string& out, Outcome outcome, std::string_view cause,
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

std::size_t begin_value(std::string& out) {
  const std::size_t at = out.size();
  out.resize(at + sizeof(std::uint64_t));
  return at;
}

void end_value(std::string& out, std::size_t at) {
  put_at<std::uint64_t>(out.data() + at, out.size() - at - sizeof(std::uint64_t));
}

void end_root_record(std::string& out) {
  put_at<std::uint32_t>(out.data(), static_cast<std::uint32_t>(out.size() - kFrame));
}

void fill_checksums(std::string& bytes) {
  for (std::size_t at = 0; at + kFrame <= bytes.size();) {
    std::string_view head(bytes.data() + at, 4);
    const auto length = get_le<std::uint32_t>(head, "a record length");
    put_at<std::uint32_t>(bytes.data() + at + 4,
                          crc32(std::string_view(bytes.data() + at + kFrame, length)));
    at += kFrame + length;
  }
}

std::optional<Header> decode_header(std::string_view in) {
  if (Codec<std::string>::decode(in) != kMagic) return std::nullopt;
  Header h;
  h.version = Codec<std::uint32_t>::decode(in);
  if (h.version < kOldestVersion || h.version > kVersion) return h;
  h.plan_fingerprint = Codec<std::uint64_t>::decode(in);
  h.inputs_digest = Codec<std::uint64_t>::decode(in);
  return h;
}

std::pair<std::string, JournalEntry> decode_root(std::string_view in) {
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
  return {std::move(key), std::move(e)};
}

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace journal_format

}  // namespace rayorch::detail
