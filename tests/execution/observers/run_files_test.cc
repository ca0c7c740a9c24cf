// Trace and report files: their paths are checked before any input is admitted, an aborted
// run still writes both (marked aborted), a write that fails at the end is reported in the
// metrics without closing the executor, and the report counts roots by outcome.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
namespace fs = std::filesystem;

std::atomic<int> g_calls{0};
std::string g_remove_dir;  // when set, the UDF removes this directory (a disk going away)

struct Check {  // fails row 2 as a record failure; value 99 throws (an aborting error)
  std::vector<ro::Row<int>> run(ro::Column<int> xs) {
    ++g_calls;
    if (!g_remove_dir.empty()) fs::remove_all(g_remove_dir);
    std::vector<ro::Row<int>> out;
    for (int x : xs) {
      if (x == 99) throw std::runtime_error("boom on 99");
      if (x == 2)
        out.push_back(ro::RecordFailure{"two is bad"});
      else
        out.push_back(x * 10);
    }
    return out;
  }
};

class RunFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rayorch-run-files-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    g_calls = 0;
    g_remove_dir.clear();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

template <class Ex>
void paths_are_checked_first(Ex& ex, const fs::path& dir) {
  const ro::RunOptions bad{.progress = false, .trace_path = (dir / "missing" / "t.json").string()};
  try {
    (void)ex.run(std::vector<int>{1, 2, 3}, bad);
    ADD_FAILURE() << "an unwritable trace path was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("RunOptions.trace_path"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist or is not writable"), std::string::npos);
  }
  EXPECT_EQ(g_calls.load(), 0) << "a UDF ran before the paths were checked";
  const ro::RunOptions is_dir{.progress = false, .report_path = dir.string()};
  EXPECT_THROW((void)ex.run(std::vector<int>{1}, is_dir), std::invalid_argument);
  EXPECT_EQ(g_calls.load(), 0);
  EXPECT_FALSE(ex.closed());
  EXPECT_EQ(ex.run(std::vector<int>{1, 3}, {.progress = false}).outputs.size(), 2u);
}

TEST_F(RunFiles, PathsAreCheckedBeforeAnyInputOnBothExecutors) {
  ro::Module<Check> check;
  auto program = ro::compile([&](ro::Port<int> x) { return check(x); });
  ro::Executor local(program);
  paths_are_checked_first(local, dir_);
  g_calls = 0;
  ro::testing::SyncExecutor sync(program);
  paths_are_checked_first(sync, dir_);
}

template <class Ex>
void aborted_run_writes_files(Ex& ex, const fs::path& dir, const std::string& tag) {
  const fs::path trace = dir / (tag + "-trace.json");
  const fs::path report = dir / (tag + "-report.json");
  EXPECT_THROW((void)ex.run(std::vector<int>{1, 99, 3}, {.progress = false,
                                                         .trace_path = trace.string(),
                                                         .report_path = report.string()}),
               ro::ExecutionError);
  ASSERT_TRUE(fs::exists(trace)) << tag;
  ASSERT_TRUE(fs::exists(report)) << tag;
  const auto r = read_json(report);
  EXPECT_TRUE(r.at("aborted").get<bool>());
  EXPECT_NE(r.at("error").get<std::string>().find("boom on 99"), std::string::npos);
  const auto t = read_json(trace);
  EXPECT_TRUE(t.at("otherData").at("aborted").get<bool>());
}

TEST_F(RunFiles, AnAbortedRunStillWritesItsTraceAndReport) {
  ro::Module<Check> check = ro::Module<Check>().batch_size(1);
  auto program = ro::compile([&](ro::Port<int> x) { return check(x); });
  ro::Executor local(program);
  aborted_run_writes_files(local, dir_, "local");
  ro::testing::SyncExecutor sync(program);
  aborted_run_writes_files(sync, dir_, "sync");
}

TEST_F(RunFiles, TheReportCountsRootsByOutcome) {
  ro::Module<Check> check;
  auto program = ro::compile([&](ro::Port<int> x) { return check(x); });
  ro::Executor ex(program);
  const fs::path report = dir_ / "report.json";
  auto r =
      ex.run(std::vector<int>{1, 2, 3, 2}, {.progress = false, .report_path = report.string()});
  EXPECT_EQ(r.metrics.roots_by_outcome.at("present"), 2u);
  EXPECT_EQ(r.metrics.roots_by_outcome.at("failed"), 2u);
  const auto j = read_json(report);
  EXPECT_EQ(j.at("roots_by_outcome").at("present").get<int>(), 2);
  EXPECT_EQ(j.at("roots_by_outcome").at("failed").get<int>(), 2);
  EXPECT_FALSE(j.at("aborted").get<bool>());
}

TEST_F(RunFiles, AWriteThatFailsAtTheEndIsReportedAndTheExecutorStaysOpen) {
  ro::Module<Check> check;
  auto program = ro::compile([&](ro::Port<int> x) { return check(x); });
  ro::Executor ex(program);
  const fs::path gone = dir_ / "gone";
  fs::create_directories(gone);
  g_remove_dir = gone.string();  // the directory disappears while the run is under way
  auto r = ex.run(std::vector<int>{1, 3},
                  {.progress = false, .report_path = (gone / "r.json").string()});
  g_remove_dir.clear();
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(r.outputs[1].value(), 30);
  ASSERT_EQ(r.metrics.file_errors.size(), 1u);
  EXPECT_NE(r.metrics.file_errors[0].find("r.json"), std::string::npos) << r.metrics.file_errors[0];
  EXPECT_FALSE(ex.closed());
  EXPECT_EQ(ex.run(std::vector<int>{4}, {.progress = false}).outputs[0].value(), 40);
}

}  // namespace
