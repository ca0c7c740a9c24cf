// The run journal's file format (src/execution/journal/format.h, docs/JOURNAL.md): the
// header and the root records are the documented ones, and a root record holds the user's
// key when one is given.
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "support/journal_testing.h"
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
  EXPECT_EQ(ro::Codec<std::uint32_t>::decode(header), 1u);
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

}  // namespace
