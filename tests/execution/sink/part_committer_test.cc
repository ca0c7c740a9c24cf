// A sink's parts committed with the journal (src/execution/sink/part_committer.h, docs/IO.md):
// each present root in exactly one committed part, failed roots only as dead letters; a
// resume writes nothing again, writes a missing part's roots again from the journal, and
// removes a part whose commit the journal does not hold; a new journal starts a new output;
// an aborted run commits what it delivered; misuse is refused before anything runs.
#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/journal_testing.h"
#include "support/sink_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
namespace fs = std::filesystem;
namespace jt = journal_testing;
using sink_testing::Contents;
using sink_testing::make_program;
using sink_testing::read_records;
using sink_testing::read_sink;
using sink_testing::rendered;
using sink_testing::sink_options;
using sink_testing::uninterrupted;

int total_calls(int rows) {
  int n = 0;
  for (int i = 0; i < rows; ++i) n += jt::calls(i);
  return n;
}

// Every row that `expected` has present is in the parts exactly once, with its value; no
// other row is.
void expect_exactly_once(const Contents& c, const std::vector<std::string>& expected) {
  EXPECT_EQ(c.rows.count(~std::size_t{0}), 0u) << "a part's row count differs from the manifest";
  std::size_t present = 0;
  for (std::size_t r = 0; r < expected.size(); ++r) {
    const bool ok = expected[r].front() == '[';
    present += ok ? 1 : 0;
    const auto it = c.rows.find(r);
    if (!ok) {
      EXPECT_EQ(it, c.rows.end()) << "row " << r << " is " << expected[r] << " but in a part";
      continue;
    }
    ASSERT_NE(it, c.rows.end()) << "row " << r << " is in no part";
    ASSERT_EQ(it->second.size(), 1u) << "row " << r << " is in the parts more than once";
    EXPECT_EQ(it->second[0], expected[r]) << "row " << r;
  }
  EXPECT_EQ(c.rows.size(), present);
  EXPECT_EQ(c.listed_rows, present);
}

// The directory holds the listed parts, the manifest and _SUCCESS, nothing else.
void expect_only_committed_files(const Contents& c) {
  std::set<std::string> want(c.parts.begin(), c.parts.end());
  want.insert("_manifest.json");
  if (c.success_marker) want.insert("_SUCCESS");
  EXPECT_EQ(c.files, want);
}

TEST(Sink, WritesEachPresentRootOnceInCommittedParts) {
  constexpr int kRows = 23;
  jt::reset_counts();
  const auto expected = uninterrupted(kRows, 2);
  jt::TempDir dir;
  auto program = make_program();
  ro::Executor ex(program);
  auto opts = sink_options(dir.file("run.journal"), dir.file("out"));
  opts.dead_letters = dir.file("failures.jsonl");
  std::size_t delivered = 0;
  ex.run(jt::inputs(kRows), opts, [&](std::size_t, auto) { ++delivered; });
  EXPECT_EQ(delivered, static_cast<std::size_t>(kRows));
  const Contents c = read_sink(dir.file("out"));
  ASSERT_TRUE(c.have_manifest);
  EXPECT_TRUE(c.complete);
  EXPECT_TRUE(c.success_marker);
  expect_exactly_once(c, expected);
  expect_only_committed_files(c);
  // 5 roots a part: the present ones fill ceil(present / 5) parts, named by sequence.
  const std::size_t parts = (c.rows.size() + 4) / 5;
  ASSERT_EQ(c.parts.size(), parts);
  for (std::size_t i = 0; i < parts; ++i) {
    EXPECT_EQ(c.parts[i], "part-0000" + std::to_string(i) + ".jsonl");
  }
  // The failed roots are dead letters, once each.
  std::ifstream dead(dir.file("failures.jsonl"));
  std::size_t failed = 0;
  for (std::string line; std::getline(dead, line);) ++failed;
  EXPECT_EQ(failed, static_cast<std::size_t>(kRows) - c.rows.size());
}

TEST(Sink, AResumeOfAFinishedRunWritesNothingAgain) {
  constexpr int kRows = 17;
  jt::reset_counts();
  const auto expected = uninterrupted(kRows);
  jt::TempDir dir;
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  const auto opts = sink_options(dir.file("run.journal"), dir.file("out"));
  ex.run(jt::inputs(kRows), opts);
  const Contents first = read_sink(dir.file("out"));
  std::map<std::string, std::string> bytes;
  for (const std::string& p : first.parts) bytes[p] = jt::read_file(dir.file("out/" + p));
  jt::reset_counts();
  const auto again = ex.run(jt::inputs(kRows), opts);
  EXPECT_EQ(total_calls(kRows), 0);
  EXPECT_EQ(again.metrics.roots_restored, static_cast<std::size_t>(kRows));
  for (int r = 0; r < kRows; ++r) EXPECT_EQ(rendered(again.outputs[r]), expected[r]);
  const Contents second = read_sink(dir.file("out"));
  EXPECT_EQ(second.parts, first.parts);
  for (const std::string& p : second.parts) {
    EXPECT_EQ(jt::read_file(dir.file("out/" + p)), bytes[p]) << p;
  }
  expect_exactly_once(second, expected);
  EXPECT_TRUE(second.complete && second.success_marker);
}

TEST(Sink, AMissingPartIsWrittenAgainFromTheJournal) {
  constexpr int kRows = 17;
  jt::reset_counts();
  const auto expected = uninterrupted(kRows);
  jt::TempDir dir;
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  const auto opts = sink_options(dir.file("run.journal"), dir.file("out"));
  ex.run(jt::inputs(kRows), opts);
  const Contents first = read_sink(dir.file("out"));
  ASSERT_GE(first.parts.size(), 3u);
  fs::remove(dir.file("out/" + first.parts[1]));
  jt::reset_counts();
  ex.run(jt::inputs(kRows), opts);
  EXPECT_EQ(total_calls(kRows), 0) << "restored from the journal, not computed";
  const Contents second = read_sink(dir.file("out"));
  expect_exactly_once(second, expected);
  expect_only_committed_files(second);
  // The lost part's roots are in a new part, numbered after every earlier one.
  EXPECT_EQ(second.parts.size(), first.parts.size());
  EXPECT_EQ(second.parts.back(), "part-0000" + std::to_string(first.parts.size()) + ".jsonl");
}

// A crash after a part was renamed into place and before its part record reached the
// journal: the journal holds the intent, then a torn group. The resume removes the part and
// runs exactly its roots again.
TEST(Sink, APartWhoseCommitTheJournalLacksIsRemovedAndItsRootsRunAgain) {
  constexpr int kRows = 17;
  jt::reset_counts();
  const auto expected = uninterrupted(kRows);
  jt::TempDir dir;
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  const std::string journal = dir.file("run.journal");
  const auto opts = sink_options(journal, dir.file("out"));
  ex.run(jt::inputs(kRows), opts);
  const Contents first = read_sink(dir.file("out"));
  const std::string bytes = jt::read_file(journal);
  const sink_testing::Records records = read_records(bytes);
  // Cut inside the last part's group: after its part record and its first root record.
  std::size_t cut = 0;
  for (std::size_t i = 0; i < records.records.size(); ++i) {
    if (records.records[i].first == 'P') cut = records.records[i + 1].second;
  }
  ASSERT_GT(cut, 0u);
  jt::write_file(journal, bytes.substr(0, cut));
  const std::set<std::string> kept = read_records(bytes.substr(0, cut)).finished;
  jt::reset_counts();
  ex.run(jt::inputs(kRows), opts);
  for (int r = 0; r < kRows; ++r) {
    const bool recorded = kept.count(jt::row_key(static_cast<std::size_t>(r))) != 0;
    EXPECT_EQ(jt::calls(r) > 0, !recorded) << "row " << r;
  }
  const Contents second = read_sink(dir.file("out"));
  expect_exactly_once(second, expected);
  expect_only_committed_files(second);
  EXPECT_EQ(second.parts.size(), first.parts.size());
}

TEST(Sink, ANewJournalStartsANewOutput) {
  constexpr int kRows = 17;
  jt::reset_counts();
  const auto expected = uninterrupted(kRows);
  jt::TempDir dir;
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  ex.run(jt::inputs(kRows), sink_options(dir.file("a.journal"), dir.file("out"), 2));
  ASSERT_GT(read_sink(dir.file("out")).parts.size(), 5u);
  ex.run(jt::inputs(kRows), sink_options(dir.file("b.journal"), dir.file("out"), 100));
  const Contents c = read_sink(dir.file("out"));
  EXPECT_EQ(c.parts, std::vector<std::string>{"part-00000.jsonl"});
  expect_exactly_once(c, expected);
  expect_only_committed_files(c);
}

TEST(Sink, WithoutAJournalPartsAreCommittedAndARerunStartsOver) {
  constexpr int kRows = 11;
  jt::reset_counts();
  const auto expected = uninterrupted(kRows);
  jt::TempDir dir;
  auto program = make_program();
  ro::Executor ex(program);
  auto opts = sink_options("", dir.file("out"), 4);
  opts.journal = {};
  ex.run(jt::inputs(kRows), opts);
  ex.run(jt::inputs(kRows), opts);
  const Contents c = read_sink(dir.file("out"));
  EXPECT_TRUE(c.complete && c.success_marker);
  expect_exactly_once(c, expected);
  expect_only_committed_files(c);
}

// The caller's callback throws at the 8th root: the run stops, the roots delivered before
// are committed, the manifest says incomplete; a resume completes the output.
TEST(Sink, AnAbortedRunCommitsWhatItDelivered) {
  constexpr int kRows = 23;
  jt::reset_counts();
  const auto expected = uninterrupted(kRows);
  jt::TempDir dir;
  auto program = make_program();
  ro::Executor ex(program);
  const auto opts = sink_options(dir.file("run.journal"), dir.file("out"));
  std::set<std::size_t> received;
  EXPECT_THROW(ex.run(jt::inputs(kRows), opts,
                      [&](std::size_t row, auto) {
                        if (received.size() == 7) throw std::runtime_error("stop");
                        received.insert(row);
                      }),
               std::runtime_error);
  const Contents partial = read_sink(dir.file("out"));
  ASSERT_TRUE(partial.have_manifest);
  EXPECT_FALSE(partial.complete);
  EXPECT_FALSE(partial.success_marker);
  std::set<std::size_t> written;
  for (const auto& [row, values] : partial.rows) written.insert(row);
  EXPECT_EQ(written, received);
  expect_only_committed_files(partial);
  ex.run(jt::inputs(kRows), opts, [](std::size_t, auto) {});
  const Contents c = read_sink(dir.file("out"));
  EXPECT_TRUE(c.complete && c.success_marker);
  expect_exactly_once(c, expected);
}

TEST(Sink, MisuseIsRefusedBeforeAnythingRuns) {
  jt::reset_counts();
  jt::TempDir dir;
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  auto expect_refused = [&](const ro::RunOptions& opts, const std::string& names) {
    try {
      ex.run(jt::inputs(4), opts);
      ADD_FAILURE() << "accepted; expected an error naming " << names;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
    }
    EXPECT_EQ(total_calls(4), 0);
  };
  auto no_format = sink_options(dir.file("a.journal"), dir.file("out"));
  no_format.sink.format = nullptr;
  expect_refused(no_format, "RunOptions.sink.format");
  auto no_rows = sink_options(dir.file("b.journal"), dir.file("out"));
  no_rows.sink.rows_per_part = 0;
  expect_refused(no_rows, "rows_per_part");
  jt::write_file(dir.file("plain-file"), "x");
  expect_refused(sink_options(dir.file("c.journal"), dir.file("plain-file")), "plain-file");
  fs::create_directories(dir.file("foreign"));
  jt::write_file(dir.file("foreign/_manifest.json"), "{\"parts\": 3}");
  expect_refused(sink_options(dir.file("d.journal"), dir.file("foreign")), "_manifest.json");
  EXPECT_THROW(ro::jsonl_parts(sink_testing::json_line, "a/b"), std::invalid_argument);
  EXPECT_THROW(ro::jsonl_parts(nullptr), std::invalid_argument);
  EXPECT_THROW(ro::file_per_root(nullptr, nullptr), std::invalid_argument);
}

// One file per root, named by the root's key; two roots with one name, or a name that is
// the sink's own, stop the run.
TEST(Sink, FilePerRootWritesAFileForEachRootAndRefusesADuplicateName) {
  constexpr int kRows = 6;
  jt::reset_counts();
  const auto expected = uninterrupted(kRows);
  jt::TempDir dir;
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  auto opts = sink_options(dir.file("run.journal"), dir.file("out"));
  opts.sink.format = ro::file_per_root(
      [](const ro::SinkRoot& r) { return std::string(r.key) + ".json"; },
      [](const ro::SinkRoot& r, std::string& out) { sink_testing::json_line(r, out); });
  ex.run(jt::inputs(kRows), opts);
  const Contents c = read_sink(dir.file("out"));
  EXPECT_EQ(c.parts.size(), static_cast<std::size_t>(kRows));
  for (int r = 0; r < kRows; ++r) {
    const std::string name = jt::row_key(static_cast<std::size_t>(r)) + ".json";
    EXPECT_NE(std::find(c.parts.begin(), c.parts.end(), name), c.parts.end()) << name;
  }
  expect_exactly_once(c, expected);

  auto same = sink_options(dir.file("dup.journal"), dir.file("dup"));
  same.sink.format = ro::file_per_root([](const ro::SinkRoot&) { return std::string("one.json"); },
                                       sink_testing::json_line);
  try {
    ex.run(jt::inputs(kRows), same);
    ADD_FAILURE() << "two roots committed one name";
  } catch (const ro::ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("one.json"), std::string::npos) << e.what();
  }
  auto reserved = sink_options(dir.file("reserved.journal"), dir.file("reserved"));
  reserved.sink.format = ro::file_per_root(
      [](const ro::SinkRoot&) { return std::string("_SUCCESS"); }, sink_testing::json_line);
  EXPECT_THROW(ex.run(jt::inputs(kRows), reserved), ro::ExecutionError);
}

}  // namespace
