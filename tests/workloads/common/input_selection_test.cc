// workloads/common/input_selection: the input list a command builds from paths, folders,
// patterns and manifests, and the share of it one job of a split takes.
#include "common/input_selection.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/files.h"
#include "support/workload_testing.h"
#include <gtest/gtest.h>

namespace {
namespace fs = std::filesystem;
using workload_testing::TempDir;
using workloads::InputError;
using workloads::InputSelection;
using workloads::select_inputs;

const workloads::InputRules kRules{
    {".pdf"},
    "nothing given",
    "nothing found",
    [](const std::string& stem, const std::string& a, const std::string& b) {
      return "duplicate " + stem + ": " + a + " and " + b;
    }};

class InputSelectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f : {"d/a.pdf", "d/b.pdf", "d/sub/c.pdf", "d/readme.txt", "e.pdf"}) {
      fs::create_directories((dir() / f).parent_path());
      std::ofstream(dir() / f) << "x";
    }
  }
  std::string at(const std::string& rel) const { return (dir() / rel).string(); }
  const fs::path& dir() const { return tmp_.path(); }
  std::string error_of(const InputSelection& s) {
    try {
      select_inputs(s, kRules);
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "selected without an error";
    return "";
  }

 private:
  TempDir tmp_{"rayorch-inputs"};
};

TEST_F(InputSelectionTest, PathsFoldersAndPatternsAreSortedEachFileOnce) {
  const InputSelection s{.paths = {at("e.pdf"), at("d"), at("d/*.pdf"), at("d/readme.txt")}};
  EXPECT_EQ(select_inputs(s, kRules),
            (std::vector<std::string>{at("d/a.pdf"), at("d/b.pdf"), at("d/readme.txt"),
                                      at("d/sub/c.pdf"), at("e.pdf")}));
}

TEST_F(InputSelectionTest, ManifestRowsFollowInTheirOwnOrder) {
  std::ofstream(dir() / "list.jsonl") << "{\"path\": \"e.pdf\"}\n{\"path\": \"d/b.pdf\"}\n"
                                      << "{\"path\": \"d/a.pdf\"}\n";
  const InputSelection s{.paths = {at("d/b.pdf")}, .manifests = {at("list.jsonl")}};
  // d/b.pdf keeps its first place (the command line); the manifest's order follows.
  EXPECT_EQ(select_inputs(s, kRules),
            (std::vector<std::string>{at("d/b.pdf"), at("e.pdf"), at("d/a.pdf")}));
}

TEST_F(InputSelectionTest, ShardsOfAListReadEveryInputExactlyOnce) {
  const InputSelection all{.paths = {at("d"), at("e.pdf")}};
  const std::vector<std::string> list = select_inputs(all, kRules);
  ASSERT_EQ(list.size(), 4u);
  for (std::size_t n : {1u, 2u, 3u, 4u, 7u}) {
    std::multiset<std::string> read;
    for (std::size_t i = 0; i < n; ++i) {
      InputSelection s = all;
      s.shard = workloads::Shard{i, n};
      const std::vector<std::string> share = select_inputs(s, kRules);
      for (std::size_t k = 0; k < share.size(); ++k) EXPECT_EQ(share[k], list[i + k * n]);
      read.insert(share.begin(), share.end());
    }
    EXPECT_EQ(read, std::multiset<std::string>(list.begin(), list.end())) << "n = " << n;
  }
}

TEST_F(InputSelectionTest, ARowRangeThenAShardAsThePythonReadersDo) {
  InputSelection s{.paths = {at("d"), at("e.pdf")}};
  const std::vector<std::string> list = select_inputs(s, kRules);
  s.row_range = workloads::RowRange{1, 3};
  EXPECT_EQ(select_inputs(s, kRules), (std::vector<std::string>{list[1], list[2]}));
  s.row_range = workloads::RowRange{1, std::nullopt};
  s.shard = workloads::Shard{1, 2};  // rows 1 and 3 of the list: index % 2 == 1
  EXPECT_EQ(select_inputs(s, kRules), (std::vector<std::string>{list[1], list[3]}));
  s.row_range = workloads::RowRange{10, std::nullopt};  // past the end: an empty share
  EXPECT_TRUE(select_inputs(s, kRules).empty());
}

TEST_F(InputSelectionTest, ShardAndRowRangeTextIsCheckedWithAClearError) {
  EXPECT_EQ(workloads::parse_shard("2/5").index, 2u);
  EXPECT_EQ(workloads::parse_shard("2/5").count, 5u);
  for (const char* bad : {"5/5", "1", "a/2", "1/0", "-1/2", "1/2/3", ""}) {
    EXPECT_THROW(workloads::parse_shard(bad), InputError) << bad;
  }
  EXPECT_EQ(workloads::parse_row_range("3:").start, 3u);
  EXPECT_FALSE(workloads::parse_row_range("3:").stop.has_value());
  EXPECT_EQ(workloads::parse_row_range("0:10").stop, 10u);
  for (const char* bad : {"5:2", "3", ":4", "a:b", "1:x"}) {
    EXPECT_THROW(workloads::parse_row_range(bad), InputError) << bad;
  }
  try {
    workloads::parse_shard("4/4");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("shard '4/4' must be I/N with 0 <= I < N"),
              std::string::npos);
  }
}

TEST_F(InputSelectionTest, BadInputsAreNamed) {
  EXPECT_EQ(error_of({}), "nothing given");
  EXPECT_EQ(error_of({.paths = {at("nope.pdf")}}), "input not found: " + at("nope.pdf"));
  EXPECT_EQ(error_of({.paths = {at("d/*.mp4")}}), "no file matches the pattern " + at("d/*.mp4"));
  fs::create_directories(dir() / "empty");
  EXPECT_EQ(error_of({.paths = {at("empty")}}), "nothing found");
  std::ofstream(dir() / "list.jsonl") << "{\"path\": \"e.pdf\"}\n{\"path\": \"gone.pdf\"}\n";
  EXPECT_EQ(error_of({.manifests = {at("list.jsonl")}}),
            at("list.jsonl") + ", line 2: input not found: " + at("gone.pdf"));
  std::ofstream(dir() / "dir.jsonl") << "{\"path\": \"d\"}\n";
  EXPECT_EQ(error_of({.manifests = {at("dir.jsonl")}}),
            at("dir.jsonl") + ", line 1: input " + at("d") + " is not a file");
}

TEST_F(InputSelectionTest, DuplicateStemsAnywhereInTheListAreRefusedEvenInAShard) {
  fs::create_directories(dir() / "other");
  std::ofstream(dir() / "other" / "a.pdf") << "y";
  std::ofstream(dir() / "list.jsonl") << "{\"path\": \"other/a.pdf\"}\n";
  InputSelection s{.paths = {at("d")}, .manifests = {at("list.jsonl")}};
  s.shard = workloads::Shard{1, 2};  // this share holds only one of the two
  EXPECT_EQ(error_of(s), "duplicate a: " + at("d/a.pdf") + " and " + at("other/a.pdf") + " (" +
                             at("list.jsonl") + ", line 1)");
}

}  // namespace
