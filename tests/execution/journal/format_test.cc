// The run journal's file format (src/execution/journal/format.h, docs/JOURNAL.md, docs/IO.md):
// the header, the root records and a sink's intent and part records are the documented ones,
// a root record holds the user's key when one is given, and a journal of version 1 still
// resumes.
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/journal_testing.h"
#include "support/sink_testing.h"
#include <gtest/gtest.h>

#include <rayorch/codec.h>
#include <rayorch/detail/journal.h>
#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace {

namespace ro = rayorch;

using journal_testing::inputs;
using journal_testing::journal_options;
using journal_testing::make_program;
using journal_testing::parse_journal;
using journal_testing::Parsed;
using journal_testing::read_file;
using journal_testing::reset_counts;
using journal_testing::row_key;
using journal_testing::TempDir;

TEST(Journal, UserKeysAndCodecLessSourcesNeedAKey) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  auto opts = journal_options(path);
  opts.journal.key = row_key;
  ex.run(inputs(5), opts);
  const Parsed p = parse_journal(read_file(path));
  EXPECT_EQ(std::set<std::string>(p.keys.begin(), p.keys.end()),
            (std::set<std::string>{"row-0", "row-1", "row-2", "row-3", "row-4"}));
}

// The file format stays readable across versions: the header names the inputs by the
// documented digest (FNV-1a of "keys", then "<decimal length>:" and each key), and a root
// record is 'R', the key, the output count and per output outcome, cause, origin and value.
TEST(Journal, TheFileFormatIsTheDocumentedOne) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  auto opts = journal_options(path);
  opts.journal.key = row_key;
  ex.run(inputs(3), opts);
  const std::string bytes = read_file(path);
  std::string_view f = bytes;
  const auto len = ro::detail::get_le<std::uint32_t>(f, "len");
  const auto sum = ro::detail::get_le<std::uint32_t>(f, "sum");
  ASSERT_EQ(sum, ro::detail::crc32(f.substr(0, len)));
  std::string_view header = f.substr(0, len);
  ASSERT_EQ(header[0], 'H');
  header.remove_prefix(1);
  EXPECT_EQ(ro::Codec<std::string>::decode(header), "rayorch-journal");
  EXPECT_EQ(ro::Codec<std::uint32_t>::decode(header), 2u);
  (void)ro::Codec<std::uint64_t>::decode(header);  // the plan fingerprint
  std::uint64_t digest = ro::detail::fnv1a64("keys");
  for (int r = 0; r < 3; ++r) {
    const std::string k = row_key(static_cast<std::size_t>(r));
    digest = ro::detail::fnv1a64(k, ro::detail::fnv1a64(std::to_string(k.size()) + ":", digest));
  }
  EXPECT_EQ(ro::Codec<std::uint64_t>::decode(header), digest);
  // The first root record, field by field.
  f.remove_prefix(len);
  const auto rlen = ro::detail::get_le<std::uint32_t>(f, "len");
  const auto rsum = ro::detail::get_le<std::uint32_t>(f, "sum");
  ASSERT_EQ(rsum, ro::detail::crc32(f.substr(0, rlen)));
  std::string_view rec = f.substr(0, rlen);
  ASSERT_EQ(rec[0], 'R');
  rec.remove_prefix(1);
  const std::string key = ro::Codec<std::string>::decode(rec);
  EXPECT_EQ(key.rfind("row-", 0), 0u);
  EXPECT_EQ(ro::Codec<std::uint32_t>::decode(rec), 1u);  // outputs
  EXPECT_EQ(ro::Codec<std::uint8_t>::decode(rec), 0u);   // present
  EXPECT_EQ(ro::Codec<std::string>::decode(rec), "");    // cause
  EXPECT_FALSE(ro::Codec<bool>::decode(rec));            // no issue origin
  std::string value = ro::Codec<std::string>::decode(rec);
  std::string_view v = value;
  const auto group = ro::Codec<std::vector<std::string>>::decode(v);
  const int root = std::stoi(key.substr(4));
  ASSERT_EQ(group.size(), static_cast<std::size_t>(root % 3 + 1));
  EXPECT_EQ(group[0], std::to_string(root * 10 * root * 10));
  EXPECT_TRUE(rec.empty());
}

// A sink's part: an intent record naming it ('I', name), then a part record ('P', name,
// sequence, root count) followed by exactly that many root records.
TEST(Journal, ASinksIntentAndPartRecordsAreTheDocumentedOnes) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = sink_testing::make_program();
  ro::testing::SyncExecutor ex(program);
  ex.run(inputs(3), sink_testing::sink_options(path, dir.file("out"), 2));
  const std::string bytes = read_file(path);
  std::vector<std::pair<char, std::string>> records;  // type, payload after it
  std::string_view rest = bytes;
  while (rest.size() >= 8) {
    const auto len = ro::detail::get_le<std::uint32_t>(rest, "len");
    (void)ro::detail::get_le<std::uint32_t>(rest, "sum");
    records.emplace_back(rest[0], std::string(rest.substr(1, len - 1)));
    rest.remove_prefix(len);
  }
  // H, then per part: I, P, R x roots (2, then 1).
  std::string types;
  for (const auto& r : records) types += r.first;
  EXPECT_EQ(types, "HIPRRIPR");
  std::string_view intent = records[1].second;
  EXPECT_EQ(ro::Codec<std::string>::decode(intent), "part-00000.jsonl");
  EXPECT_TRUE(intent.empty());
  std::string_view part = records[6].second;
  EXPECT_EQ(ro::Codec<std::string>::decode(part), "part-00001.jsonl");
  EXPECT_EQ(ro::Codec<std::uint64_t>::decode(part), 1u);  // sequence
  EXPECT_EQ(ro::Codec<std::uint64_t>::decode(part), 1u);  // roots
  EXPECT_TRUE(part.empty());
}

// A journal of version 1 (no sink records) resumes: its roots are restored, and this
// version's header follows its records.
TEST(Journal, AVersionOneJournalStillResumes) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  auto opts = journal_options(path);
  opts.journal.key = row_key;
  ex.run(inputs(4), opts);
  std::string bytes = read_file(path);
  // Rewrite the header's version (after the type and the magic string) to 1.
  const std::size_t at = 8 + 1 + 8 + std::string("rayorch-journal").size();
  bytes[at] = 1;
  std::string_view frame = bytes;
  const auto len = ro::detail::get_le<std::uint32_t>(frame, "len");
  std::string crc;
  ro::detail::put_le(ro::detail::crc32(std::string_view(bytes).substr(8, len)), crc);
  bytes.replace(4, 4, crc);
  journal_testing::write_file(path, bytes);
  reset_counts();
  const auto r = ex.run(inputs(4), opts);
  EXPECT_EQ(r.metrics.roots_restored, 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(journal_testing::calls(i), 0);
  const std::string after = read_file(path);
  ASSERT_GT(after.size(), bytes.size());
  EXPECT_EQ(after.substr(0, bytes.size()), bytes);
  EXPECT_EQ(after[bytes.size() + 8], 'H');
}

}  // namespace
