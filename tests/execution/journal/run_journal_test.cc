// An open run journal checked against the run (src/execution/journal/run_journal.h,
// rayorch/journal.h): a foreign journal (another pipeline, other inputs) and an unwritable
// path are refused before anything runs, unless forced; allow_other_inputs restores the rows
// a journal of the same pipeline has a record for, and still refuses another pipeline's.
#include <stdexcept>
#include <string>

#include "support/journal_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace {

namespace ro = rayorch;

using journal_testing::calls;
using journal_testing::inputs;
using journal_testing::journal_options;
using journal_testing::make_other_program;
using journal_testing::make_program;
using journal_testing::render;
using journal_testing::reset_counts;
using journal_testing::row_key;
using journal_testing::TempDir;
using journal_testing::uninterrupted;

TEST(Journal, RefusesAForeignJournalUnlessForced) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  {
    auto program = make_program();
    ro::testing::SyncExecutor ex(program);
    ex.run(inputs(6), journal_options(path));
  }
  auto other = make_other_program();
  ro::testing::SyncExecutor ex(other);
  try {
    ex.run(inputs(6), journal_options(path));
    FAIL() << "a journal of another pipeline was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("another pipeline"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("journal.force"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(ex.closed());
  // Other inputs for the same pipeline are refused too.
  auto program = make_program();
  ro::testing::SyncExecutor same(program);
  try {
    same.run(inputs(7), journal_options(path));
    FAIL() << "a journal of other inputs was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("other inputs"), std::string::npos) << e.what();
  }
  // Forced: the records are used.
  auto opts = journal_options(path);
  opts.journal.force = true;
  reset_counts();
  auto r = same.run(inputs(7), opts);
  EXPECT_EQ(r.metrics.roots_restored, 6u);
  EXPECT_EQ(calls(6), 1);
  EXPECT_EQ(calls(0), 0);
}

TEST(Journal, RefusesAnUnwritablePathBeforeAnythingRuns) {
  reset_counts();
  TempDir dir;
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  for (const std::string& path :
       {std::string("/nonexistent-rayorch-dir/run.journal"), dir.path.string()}) {
    try {
      ex.run(inputs(3), journal_options(path));
      FAIL() << "accepted " << path;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  ro::RunOptions o;
  o.progress = false;
  o.dead_letters = "/nonexistent-rayorch-dir/dead.jsonl";
  EXPECT_THROW(ex.run(inputs(3), o), std::invalid_argument);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(calls(i), 0);
  EXPECT_FALSE(ex.closed());
}

// A journal of other inputs is refused unless allow_other_inputs, which restores the rows
// it has a record for; it still refuses another pipeline's journal.
TEST(Journal, AllowOtherInputsRestoresKnownRowsOfTheSamePipelineOnly) {
  reset_counts();
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  auto opts = journal_options(path);
  opts.journal.key = row_key;
  {
    ro::testing::SyncExecutor ex(program);
    ex.run(inputs(4), opts);
  }
  ro::testing::SyncExecutor ex(program);
  EXPECT_THROW(ex.run(inputs(9), opts), std::invalid_argument);
  opts.journal.allow_other_inputs = true;
  reset_counts();
  auto r = ex.run(inputs(9), opts);
  EXPECT_EQ(r.metrics.roots_restored, 4u);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(calls(i) > 0, i >= 4) << "root " << i;
  EXPECT_EQ(render(r.outputs), uninterrupted(9));
  auto other = make_other_program();
  ro::testing::SyncExecutor foreign(other);
  try {
    foreign.run(inputs(9), opts);
    FAIL() << "allow_other_inputs accepted another pipeline's journal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("another pipeline"), std::string::npos) << e.what();
  }
}

}  // namespace
