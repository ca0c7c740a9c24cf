// The error budget over whole runs (RunOptions::max_failed_roots and max_failed_fraction;
// src/execution/run/error_budget.h, whose own tests are error_budget_test.cc): it stops a run
// where 30 % of the roots fail, with the journal holding exactly the roots delivered, and
// stops dispatching with a single input batch, leaving the executor usable.
#include <algorithm>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "support/journal_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace {

namespace ro = rayorch;
namespace fs = std::filesystem;

using journal_testing::calls;
using journal_testing::event_log;
using journal_testing::inputs;
using journal_testing::journal_options;
using journal_testing::make_program;
using journal_testing::parse_journal;
using journal_testing::Parsed;
using journal_testing::read_file;
using journal_testing::reset_counts;
using journal_testing::row_key;
using journal_testing::shared;
using journal_testing::TempDir;

TEST(ErrorBudget, StopsARunWhereThirtyPercentFail) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  for (int variant = 0; variant < 2; ++variant) {
    SCOPED_TRACE(variant == 0 ? "max_failed_roots" : "max_failed_fraction");
    std::error_code ec;
    fs::remove(path, ec);
    reset_counts();
    shared()->fail_mod = 3;  // 30 % of the roots fail
    ro::testing::SyncExecutor ex(program);
    auto opts = journal_options(path);
    opts.journal.key = row_key;
    if (variant == 0) {
      opts.max_failed_roots = 5;
    } else {
      opts.max_failed_fraction = 0.2;
      opts.min_roots_for_failed_fraction = 20;
    }
    std::set<std::string> delivered;
    try {
      ex.run(inputs(200), opts,
             [&](std::size_t row, const auto&) { delivered.insert(row_key(row)); });
      FAIL() << "the run did not stop";
    } catch (const ro::ExecutionError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("error budget exceeded"), std::string::npos) << what;
      EXPECT_NE(what.find(variant == 0 ? "max_failed_roots = 5" : "max_failed_fraction"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("bad root"), std::string::npos) << what;
    }
    EXPECT_LT(delivered.size(), 200u);  // stopped early
    // Spent only past its limit: six failed roots, or a fraction of at least 20 roots.
    EXPECT_GE(delivered.size(), variant == 0 ? 6u : 20u);
    // The journal holds exactly the roots that were delivered.
    const Parsed p = parse_journal(read_file(path));
    EXPECT_EQ(std::set<std::string>(p.keys.begin(), p.keys.end()), delivered);
    EXPECT_EQ(p.keys.size(), delivered.size());
    // No root beyond the admitted batches ran.
    for (int i = 0; i < 200; ++i) {
      if (delivered.count(row_key(i)) == 0) {
        EXPECT_EQ(calls(i), 0) << "root " << i;
      }
    }
  }
}

// With one input batch of every row, the budget still stops the run at the first check past
// it: after the failed root that exceeds it reached the caller, only the RPCs already in
// flight (at most one per actor) may start. The executor stays usable afterwards.
TEST(ErrorBudget, StopsDispatchingWithASingleInputBatch) {
  reset_counts();
  auto program = make_program();  // three actors: Split, and Work with two replicas
  ro::Executor ex(program);
  shared()->fail_mod = 3;
  ro::RunOptions o;
  o.progress = false;
  o.max_failed_roots = 5;  // input_batch_size 0: one batch of every row
  {
    std::lock_guard<std::mutex> lock(event_log().mutex);
    event_log().events.clear();
  }
  int failed = 0;
  EXPECT_THROW(ex.run(inputs(200), o,
                      [&](std::size_t, const auto& out) {
                        if (!out.ok() && ++failed == 6) event_log().add("exceeded");
                      }),
               ro::ExecutionError);
  std::vector<std::string> events;
  {
    std::lock_guard<std::mutex> lock(event_log().mutex);
    events = event_log().events;
  }
  const auto exceeded = std::find(events.begin(), events.end(), "exceeded");
  ASSERT_NE(exceeded, events.end());
  EXPECT_LE(std::count(exceeded, events.end(), "rpc"), 3) << "RPCs started after the budget";
  // Not closed: the same actors run the next run to its end.
  EXPECT_FALSE(ex.closed());
  shared()->fail_mod = 0;
  auto r = ex.run(inputs(20), {.progress = false});
  for (const auto& out : r.outputs) EXPECT_TRUE(out.ok());
}

}  // namespace
