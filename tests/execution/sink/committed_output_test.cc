// Reading a sink's output back (rayorch/sink_reader.h): the parts its manifest lists, in
// order, and nothing else; clear errors for a directory no sink wrote.
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/journal_testing.h"
#include "support/sink_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>
#include <rayorch/sink_reader.h>

namespace {

namespace ro = rayorch;
namespace fs = std::filesystem;
namespace jt = journal_testing;

std::string error_of(const std::string& dir) {
  try {
    ro::read_committed_output(dir);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(CommittedOutput, ReadsTheListedPartsOfARunInOrderAndNothingElse) {
  jt::TempDir dir;
  const std::string out = dir.file("out");
  ro::testing::SyncExecutor ex(sink_testing::make_program());
  jt::shared()->fail_mod = 0;
  ex.run(jt::inputs(12), sink_testing::sink_options(dir.file("run.journal"), out, 5));
  std::ofstream(fs::path(out) / "stray.jsonl") << "{\"row\": 99}\n";

  const ro::CommittedOutput c = ro::read_committed_output(out);
  EXPECT_TRUE(c.complete);
  EXPECT_EQ(c.rows, 12u);
  ASSERT_EQ(c.parts.size(), 3u);  // 5 + 5 + 2
  EXPECT_EQ(fs::path(c.parts[0]).filename(), "part-00000.jsonl");
  const std::vector<std::string> lines = ro::read_committed_lines(out);
  ASSERT_EQ(lines.size(), 12u);
  const sink_testing::Contents seen = sink_testing::read_sink(out);
  for (const std::string& line : lines) EXPECT_EQ(line.find("\"row\":99"), std::string::npos);
  EXPECT_EQ(seen.rows.size(), 12u);
}

TEST(CommittedOutput, ADirectoryNoSinkWroteIsNamed) {
  jt::TempDir dir;
  EXPECT_NE(error_of(dir.path.string()).find("has no _manifest.json"), std::string::npos);
  std::ofstream(dir.path / "_manifest.json") << "{\"format\": \"other\"}";
  const std::string foreign = error_of(dir.path.string());
  EXPECT_NE(foreign.find("is not a sink's manifest"), std::string::npos) << foreign;
  std::ofstream(dir.path / "_manifest.json", std::ios::trunc)
      << R"({"format": "rayorch-sink", "version": 1, "complete": false, "rows": 1,
             "parts": [{"name": "gone.jsonl", "sequence": 0, "rows": 1}]})";
  EXPECT_FALSE(ro::read_committed_output(dir.path.string()).complete);
  try {
    ro::read_committed_lines(dir.path.string());
    ADD_FAILURE() << "a listed part that is gone was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gone.jsonl is listed"), std::string::npos) << e.what();
  }
}

}  // namespace
