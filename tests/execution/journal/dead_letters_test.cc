// Dead letters (src/execution/journal/dead_letters.h, RunOptions::dead_letters): a JSON line
// names every root that is not present, computed or restored from a journal, with the
// fields RunOptions::dead_letter_fields adds.
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/journal_testing.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace {

namespace ro = rayorch;

using journal_testing::inputs;
using journal_testing::journal_options;
using journal_testing::make_program;
using journal_testing::reset_counts;
using journal_testing::shared;
using journal_testing::TempDir;

TEST(DeadLetters, NameEveryRootThatIsNotPresent) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("dead.jsonl");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  shared()->fail_mod = 2;
  ro::RunOptions o;
  o.progress = false;
  o.dead_letters = path;
  o.dead_letter_fields = [](std::size_t row) {
    return std::vector<std::pair<std::string, std::string>>{{"name", "doc-" + std::to_string(row)},
                                                            {"row", "overwritten"}};
  };
  auto r = ex.run(inputs(20), o);
  std::ifstream in(path);
  std::string line;
  std::map<std::size_t, nlohmann::json> letters;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    letters[j["row"].get<std::size_t>()] = j;
  }
  std::set<std::size_t> expected;
  for (std::size_t i = 0; i < 20; ++i) {
    if (!r.outputs[i].ok()) expected.insert(i);
  }
  EXPECT_EQ(expected, (std::set<std::size_t>{0, 1, 10, 11}));
  ASSERT_EQ(letters.size(), expected.size());
  for (std::size_t row : expected) {
    const auto& j = letters[row];
    const ro::OutputIssue& issue = r.outputs[row].issue();
    EXPECT_EQ(j["outcome"], std::string(ro::to_string(issue.outcome)));
    EXPECT_EQ(j["failed"], issue.outcome != ro::Outcome::dropped);
    EXPECT_EQ(j["cause"], issue.cause);
    EXPECT_EQ(j["call"], "Work#1");
    EXPECT_EQ(j["entity"], issue.origin->entity);
    EXPECT_EQ(j["entity"].get<std::string>().rfind(std::to_string(row) + "/", 0), 0u);
    EXPECT_GE(j["attempts"].get<int>(), 1);
    EXPECT_EQ(j["key"].get<std::string>().size(), 16u);  // the digest of the row's value
    EXPECT_EQ(j["restored"], false);
    EXPECT_EQ(j["name"], "doc-" + std::to_string(row));  // RunOptions::dead_letter_fields
  }
  // Restored failures are dead letters too.
  auto opts = journal_options(dir.file("run.journal"));
  opts.dead_letters = path;
  opts.journal.retry_failed = false;
  ex.run(inputs(20), opts);
  reset_counts();
  ex.run(inputs(20), opts);
  std::ifstream again(path);
  int restored = 0;
  while (std::getline(again, line)) restored += nlohmann::json::parse(line)["restored"] ? 1 : 0;
  EXPECT_EQ(restored, 4);
}

TEST(DeadLetters, TellADroppedRowFromAFailedOne) {
  // outcome is the root output's fact; failed is the row's verdict that failure counts and
  // exit codes follow: a row a filter removed on purpose is not a failure.
  TempDir dir;
  const std::string path = dir.file("dead.jsonl");
  auto kept =
      ro::compile([](ro::Port<int> x, ro::Port<bool> keep) { return ro::F::filter(x, keep); });
  ro::testing::SyncExecutor ex(kept);
  ro::RunOptions o;
  o.progress = false;
  o.dead_letters = path;
  auto r = ex.run(std::vector<int>{1, 2, 3}, std::vector<bool>{true, false, true}, o);
  ASSERT_EQ(r.outputs[1].issue().outcome, ro::Outcome::dropped);
  std::ifstream in(path);
  std::string line;
  std::vector<nlohmann::json> letters;
  while (std::getline(in, line)) letters.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(letters[0]["row"], 1);
  EXPECT_EQ(letters[0]["outcome"], "dropped");
  EXPECT_EQ(letters[0]["failed"], false);
}

}  // namespace
