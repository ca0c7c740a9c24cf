// The run wrapper of the journal (src/execution/journal/run_journaled.cc, rayorch/journal.h):
// a finished journal restores every root without running a UDF; failed roots run again
// unless told not to; Entity keys stay the caller's rows across resumes; a root is recorded
// only after the caller received it; observers see restored roots with the caller's rows.
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/journal_testing.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace {

namespace ro = rayorch;

using journal_testing::calls;
using journal_testing::inputs;
using journal_testing::journal_options;
using journal_testing::make_program;
using journal_testing::parse_journal;
using journal_testing::Parsed;
using journal_testing::read_file;
using journal_testing::render;
using journal_testing::reset_counts;
using journal_testing::row_key;
using journal_testing::shared;
using journal_testing::TempDir;
using journal_testing::uninterrupted;

TEST(Journal, RestoresACompletedRunWithoutRunningAnything) {
  reset_counts();
  const auto expected = uninterrupted(40);
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  {
    reset_counts();
    ro::Executor ex(program);
    auto r = ex.run(inputs(40), journal_options(path));
    EXPECT_EQ(render(r.outputs), expected);
    EXPECT_EQ(r.metrics.roots_restored, 0u);
    for (int i = 0; i < 40; ++i) EXPECT_EQ(calls(i), i % 3 + 1) << "root " << i;
  }
  reset_counts();
  ro::Executor ex(program);
  auto r = ex.run(inputs(40), journal_options(path));
  EXPECT_EQ(render(r.outputs), expected);
  EXPECT_EQ(r.metrics.roots_restored, 40u);
  EXPECT_EQ(r.metrics.roots_by_outcome["present"], 40u);
  EXPECT_EQ(r.metrics.journal_discarded_bytes, 0u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(calls(i), 0) << "root " << i << " ran again";
  // The JSON report counts them too.
  auto report_opts = journal_options(path);
  report_opts.report_path = dir.file("report.json");
  ex.run(inputs(40), report_opts);
  const auto report = nlohmann::json::parse(read_file(report_opts.report_path));
  EXPECT_EQ(report["roots_restored"], 40);
  EXPECT_EQ(report["roots_by_outcome"]["present"], 40);
  // The streaming form delivers the restored rows too, each once, in order when asked.
  std::vector<std::size_t> order;
  auto opts = journal_options(path);
  opts.ordered_stream = true;
  ex.run(inputs(40), opts, [&](std::size_t row, auto out) {
    order.push_back(row);
    ASSERT_TRUE(out.ok());
  });
  EXPECT_EQ(order, [] {
    std::vector<std::size_t> v;
    for (std::size_t i = 0; i < 40; ++i) v.push_back(i);
    return v;
  }());
}

TEST(Journal, FailedRootsRunAgainUnlessTold) {
  reset_counts();
  const auto expected = uninterrupted(30, 3);
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  reset_counts();
  shared()->fail_mod = 3;
  EXPECT_EQ(render(ex.run(inputs(30), journal_options(path)).outputs), expected);
  // Retried: the failing roots (n % 10 < 3) run again and fail again; the rest restore.
  reset_counts();
  shared()->fail_mod = 3;
  auto r = ex.run(inputs(30), journal_options(path));
  EXPECT_EQ(render(r.outputs), expected);
  EXPECT_EQ(r.metrics.roots_restored, 21u);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(calls(i) > 0, i % 10 < 3) << "root " << i;
  // Not retried: everything restores, failures included, with their causes.
  reset_counts();
  auto opts = journal_options(path);
  opts.journal.retry_failed = false;
  r = ex.run(inputs(30), opts);
  EXPECT_EQ(render(r.outputs), expected);
  EXPECT_EQ(r.metrics.roots_restored, 30u);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(calls(i), 0) << "root " << i;
  ASSERT_FALSE(r.outputs[1].ok());
  ASSERT_TRUE(r.outputs[1].issue().origin.has_value());
  EXPECT_EQ(r.outputs[1].issue().origin->call, "Work#1");
}

// A resumed run computes a subset of the rows; their Entity keys stay the caller's rows in
// the issue origins and the dead letters (docs/JOURNAL.md: keys are the source row's).
TEST(Journal, EntityKeysStayTheSourceRowsAcrossResumes) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  const std::string dead = dir.file("dead.jsonl");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  shared()->fail_mod = 3;
  ex.run(inputs(30), journal_options(path));
  // Only the failed roots (n % 10 < 3) run again, as rows 0..8 of the resumed run.
  reset_counts();
  shared()->fail_mod = 3;
  auto opts = journal_options(path);
  opts.dead_letters = dead;
  auto r = ex.run(inputs(30), opts);
  ASSERT_EQ(r.metrics.roots_restored, 21u);
  std::ifstream in(dead);
  std::map<std::size_t, std::string> letters;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    letters[j["row"].get<std::size_t>()] = j["entity"].get<std::string>();
  }
  ASSERT_EQ(letters.size(), 9u);
  for (std::size_t row : {0u, 1u, 2u, 10u, 11u, 12u, 20u, 21u, 22u}) {
    SCOPED_TRACE(row);
    ASSERT_FALSE(r.outputs[row].ok());
    ASSERT_TRUE(r.outputs[row].issue().origin.has_value());
    const std::string& entity = r.outputs[row].issue().origin->entity;
    EXPECT_EQ(entity.rfind(std::to_string(row) + "/", 0), 0u) << entity;
    EXPECT_EQ(letters[row], entity);
  }
}

// A root is recorded only after the caller received it: when the streaming callback throws
// for a row (the caller did not take it), that row is not in the journal and runs again.
TEST(Journal, RecordsARootOnlyAfterTheCallerReceivedIt) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  auto opts = journal_options(path);
  opts.journal.key = row_key;
  {
    ro::testing::SyncExecutor ex(program);
    EXPECT_THROW(ex.run(inputs(12), opts,
                        [&](std::size_t row, const auto&) {
                          if (row == 5) throw std::runtime_error("caller failed on row 5");
                        }),
                 std::runtime_error);
  }
  const Parsed p = parse_journal(read_file(path));
  const std::set<std::string> keys(p.keys.begin(), p.keys.end());
  EXPECT_EQ(keys.count("row-5"), 0u);
  EXPECT_FALSE(keys.empty());
  reset_counts();
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run(inputs(12), opts);
  EXPECT_EQ(r.metrics.roots_restored, keys.size());
  EXPECT_GT(calls(5), 0);
  EXPECT_EQ(render(r.outputs), uninterrupted(12));
}

// Records the root events of a run.
struct RootLog : ro::RunObserver {
  std::vector<ro::RootEvent> roots;
  std::size_t started_restored = 0;
  bool started = false;
  std::vector<std::size_t> delivered_at_start;  // rows the caller had when the run started
  const std::vector<std::size_t>* delivered = nullptr;
  void on_run_start(const ro::RunStartEvent& e) override {
    started = true;
    started_restored = e.restored;
    if (delivered) delivered_at_start = *delivered;
  }
  void on_root(const ro::RootEvent& e) override { roots.push_back(e); }
};

// Restored roots reach observers like computed ones: after on_run_start, each right after
// the caller received it, marked restored, before any computed root; every event names the
// caller's row, also for the computed rows of a resumed run (a subset of the rows).
TEST(Journal, ObserversSeeRestoredRootsWithTheCallersRows) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  auto opts = journal_options(path);
  opts.journal.key = row_key;
  {
    // Record the even rows only: a user key that changes nothing else.
    ro::testing::SyncExecutor ex(program);
    auto first = opts;
    first.journal.allow_other_inputs = true;
    std::vector<int> even;
    for (int i = 0; i < 12; i += 2) even.push_back(i);
    first.journal.key = [](std::size_t row) { return row_key(row * 2); };
    ex.run(even, first);
  }
  reset_counts();
  ro::testing::SyncExecutor ex(program);
  auto log = std::make_shared<RootLog>();
  std::vector<std::size_t> delivered;
  log->delivered = &delivered;
  opts.observers.push_back(log);
  opts.journal.allow_other_inputs = true;  // the first run had 6 of these 12 rows
  auto r = ex.run(inputs(12), opts, [&](std::size_t row, const auto&) {
    delivered.push_back(row);
    // The event of this row comes after the caller received it.
    for (const ro::RootEvent& e : log->roots) EXPECT_NE(e.row, row);
  });
  EXPECT_EQ(r.metrics.roots_restored, 6u);
  EXPECT_TRUE(log->started);
  EXPECT_EQ(log->started_restored, 6u);
  EXPECT_TRUE(log->delivered_at_start.empty()) << "a root was delivered before the run started";
  ASSERT_EQ(log->roots.size(), 12u);
  std::vector<std::size_t> event_rows;
  for (std::size_t i = 0; i < log->roots.size(); ++i) {
    const ro::RootEvent& e = log->roots[i];
    event_rows.push_back(e.row);
    EXPECT_EQ(e.restored, i < 6) << "event " << i << " row " << e.row;
    EXPECT_EQ(e.restored, e.row % 2 == 0) << "row " << e.row;
    EXPECT_EQ(e.outcome, ro::Outcome::present);
  }
  EXPECT_EQ(event_rows, delivered);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(calls(i) > 0, i % 2 == 1) << "root " << i;
  EXPECT_EQ(std::set<std::size_t>(event_rows.begin(), event_rows.end()).size(), 12u);
}

}  // namespace
