// The run journal's file format (rayorch/journal.h): append-only records, each framed as
// u32 payload length, u32 CRC-32 of the payload, payload (little-endian). A payload starts
// with its type: a header (magic, version, plan fingerprint, inputs digest), a root (key,
// port count, then per port its outcome, cause, issue origin and Codec value bytes), and
// since version 2 a sink's intent (the name of a part about to be renamed into place) and
// part (its name, sequence number and root count; the root records of exactly those roots
// follow it, and the part is committed once the last of them is read).
//
// Building a root record writes the frame with a zero checksum; the writer fills the
// checksums in (fill_checksums) off the committing thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rayorch/detail/journal.h"
#include "rayorch/outcome.h"

namespace rayorch::detail::journal_format {

inline constexpr std::string_view kMagic = "rayorch-journal";
inline constexpr std::uint32_t kVersion = 2;
/// The oldest version this reader accepts (1 has no intent or part records).
inline constexpr std::uint32_t kOldestVersion = 1;
inline constexpr char kHeader = 'H';
inline constexpr char kRoot = 'R';
inline constexpr char kIntent = 'I';
inline constexpr char kPart = 'P';
inline constexpr std::size_t kFrame = 8;  // u32 length + u32 crc

/// The header record, framed and checksummed.
std::string header_record(std::uint64_t plan_fingerprint, std::uint64_t inputs_digest);

/// Starts a root record in `out` (cleared first): the frame, to be completed by
/// end_root_record, the type, the key and the port count. Append `ports` ports, each with
/// put_port and a value between begin_value and end_value.
void begin_root_record(std::string& out, std::string_view key, std::uint32_t ports);
/// A port's outcome, cause and issue origin.
void put_port(std::string& out, Outcome outcome, std::string_view cause,
              const std::optional<IssueOrigin>& origin);
/// Around the Codec bytes of a port's value (none when not present).
std::size_t begin_value(std::string& out);
void end_value(std::string& out, std::size_t at);
/// Writes the payload length into the frame of the record in `out`; the checksum stays 0.
void end_root_record(std::string& out);
/// Fills in the checksums of the framed records in `bytes` (whole records only).
void fill_checksums(std::string& bytes);

/// An intent record (a part about to become visible), framed; checksum 0 (fill_checksums).
std::string intent_record(std::string_view part);
/// A part record (the next `roots` root records are the part's), framed; checksum 0.
void put_part_record(std::string& out, std::string_view part, std::uint64_t sequence,
                     std::uint64_t roots);

/// A part record's payload after its type byte. Throws DecodeError when broken.
struct PartRecord {
  std::string name;
  std::uint64_t sequence = 0;
  std::uint64_t roots = 0;
};
PartRecord decode_part(std::string_view payload);
/// An intent record's payload after its type byte: the part's name.
std::string decode_intent(std::string_view payload);

/// A header's payload after its type byte; nullopt when it is not a journal's header.
/// Throws DecodeError when it is cut short.
struct Header {
  std::uint32_t version = 0;
  std::uint64_t plan_fingerprint = 0;
  std::uint64_t inputs_digest = 0;
};
std::optional<Header> decode_header(std::string_view payload);
/// A root's payload after its type byte: its key and entry. Throws DecodeError when broken.
std::pair<std::string, JournalEntry> decode_root(std::string_view payload);

/// strerror(errno), for messages.
std::string errno_text();

}  // namespace rayorch::detail::journal_format
