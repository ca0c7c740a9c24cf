// Observers of a run (rayorch/observer.h): a user observer sees every RPC, root and the
// run's start and end on the caller's thread, on both executors; its report section lands
// in the JSON report; an end-of-run failure is recorded without losing the outputs; a
// failure during the run aborts it like the streaming callback; and the atomic-file helper.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/atomic_file.h>
#include <rayorch/observer.h>
#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace {

namespace ro = rayorch;
namespace fs = std::filesystem;

struct Split {  // n -> [0, n)
  std::vector<ro::Row<std::vector<int>>> run(ro::Column<int> ns) {
    std::vector<ro::Row<std::vector<int>>> out;
    for (int n : ns) {
      std::vector<int> v;
      for (int i = 0; i < n; ++i) v.push_back(i);
      out.push_back(std::move(v));
    }
    return out;
  }
};

struct Square {  // fails 3 as a record failure
  std::vector<ro::Row<int>> run(ro::Column<int> xs) {
    std::vector<ro::Row<int>> out;
    for (int x : xs) {
      if (x == 3)
        out.push_back(ro::RecordFailure{"three"});
      else
        out.push_back(x * x);
    }
    return out;
  }
};

auto make_program() {
  return ro::compile([](ro::Port<int> n) {
    ro::Module<Split> split;
    ro::Module<Square> square = ro::Module<Square>().replicas(2).batch_size(2);
    auto kids = ro::F::expand(split(n));
    return ro::F::reduce(square(kids));
  });
}

struct Recorder final : ro::RunObserver {
  std::thread::id caller = std::this_thread::get_id();
  bool other_thread = false;
  int starts = 0;
  int ends = 0;
  std::size_t start_rows = 0;
  std::vector<std::string> call_names;
  std::uint64_t rpcs = 0;
  std::uint64_t grains = 0;
  std::vector<std::size_t> roots;
  std::vector<ro::Outcome> outcomes;
  bool saw_final_progress = false;
  bool end_aborted = false;
  std::size_t end_delivered = 0;
  bool rpc_after_end = false;

  void check_thread() { other_thread = other_thread || std::this_thread::get_id() != caller; }
  void on_run_start(const ro::RunStartEvent& e) override {
    check_thread();
    ++starts;
    start_rows = e.rows;
    call_names.assign(e.calls.begin(), e.calls.end());
  }
  void on_rpc(const ro::RpcEvent& e) override {
    check_thread();
    rpc_after_end = rpc_after_end || ends > 0;
    ++rpcs;
    grains += e.rows;
    EXPECT_LE(e.start_seconds, e.end_seconds);
    EXPECT_GE(e.call, 0);
    EXPECT_LT(static_cast<std::size_t>(e.call), call_names.size());
  }
  void on_root(const ro::RootEvent& e) override {
    check_thread();
    roots.push_back(e.row);
    outcomes.push_back(e.outcome);
  }
  void on_progress(const ro::ProgressEvent& e) override {
    check_thread();
    if (e.final) {
      saw_final_progress = true;
      EXPECT_EQ(e.roots_done, e.roots_total);
    }
  }
  void on_run_end(const ro::RunEndEvent& e) override {
    check_thread();
    ++ends;
    end_aborted = e.aborted;
    end_delivered = e.roots_delivered;
  }
  ro::ReportSection report_section() override {
    return {"recorder", nlohmann::json{{"roots", roots.size()}}.dump()};
  }
};

template <class Executor>
void expect_observed(Executor& ex) {
  auto rec = std::make_shared<Recorder>();
  auto result = ex.run(std::vector<int>{2, 5, 0, 1}, {.input_batch_size = 2,
                                                      .max_active_input_batches = 2,
                                                      .progress = false,
                                                      .observers = {rec}});
  EXPECT_FALSE(rec->other_thread) << "every callback runs on the caller's thread";
  EXPECT_EQ(rec->starts, 1);
  EXPECT_EQ(rec->ends, 1);
  EXPECT_FALSE(rec->end_aborted);
  EXPECT_FALSE(rec->rpc_after_end);
  EXPECT_EQ(rec->start_rows, 4u);
  EXPECT_EQ(rec->call_names.size(), result.metrics.calls.size());
  std::uint64_t rpcs = 0, grains = 0;
  for (const auto& c : result.metrics.calls) {
    rpcs += c.rpcs;
    grains += c.grain_dispatches;
  }
  EXPECT_EQ(rec->rpcs, rpcs);
  EXPECT_EQ(rec->grains, grains);
  EXPECT_EQ(std::set<std::size_t>(rec->roots.begin(), rec->roots.end()),
            (std::set<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(rec->roots.size(), 4u);
  EXPECT_EQ(rec->end_delivered, 4u);
  EXPECT_TRUE(rec->saw_final_progress);
  // Source 1 (5 children) holds the failing child 3; the others are present.
  for (std::size_t i = 0; i < rec->roots.size(); ++i) {
    EXPECT_EQ(rec->outcomes[i] == ro::Outcome::present, rec->roots[i] != 1) << rec->roots[i];
  }
}

TEST(Observer, SeesEveryRpcAndRootOnTheCallersThreadOnTheLocalExecutor) {
  ro::Executor ex(make_program());
  expect_observed(ex);
  expect_observed(ex);  // one observer type, a second run: fresh events
}

TEST(Observer, SeesEveryRpcAndRootOnTheSyncExecutor) {
  ro::testing::SyncExecutor ex(make_program());
  expect_observed(ex);
}

class ObserverFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rayorch-observer-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ObserverFiles, AReportSectionBecomesATopLevelKeyOfTheReport) {
  ro::Executor ex(make_program());
  auto rec = std::make_shared<Recorder>();
  const fs::path report = dir_ / "report.json";
  auto result = ex.run(std::vector<int>{2, 1},
                       {.progress = false, .report_path = report.string(), .observers = {rec}});
  EXPECT_TRUE(result.metrics.file_errors.empty());
  std::ifstream in(report);
  const auto doc = nlohmann::json::parse(in);
  ASSERT_TRUE(doc.contains("recorder")) << doc.dump();
  EXPECT_EQ(doc["recorder"]["roots"], 2);
  EXPECT_EQ(doc["roots_delivered"], 2);
}

struct FailsAtEnd final : ro::RunObserver {
  void on_run_end(const ro::RunEndEvent&) override {
    throw std::runtime_error("the index server is down");
  }
};

TEST(Observer, AnEndOfRunFailureIsRecordedAndTheOutputsStand) {
  ro::Executor ex(make_program());
  auto result = ex.run(std::vector<int>{2, 1},
                       {.progress = false, .observers = {std::make_shared<FailsAtEnd>()}});
  ASSERT_EQ(result.outputs.size(), 2u);
  EXPECT_EQ(result.outputs[0].value().to_vector(), (std::vector<int>{0, 1}));
  ASSERT_EQ(result.metrics.file_errors.size(), 1u);
  EXPECT_NE(result.metrics.file_errors[0].find("the index server is down"), std::string::npos);
  EXPECT_FALSE(ex.closed());
}

struct FailsOnRoot final : ro::RunObserver {
  bool ended_aborted = false;
  void on_root(const ro::RootEvent&) override { throw std::runtime_error("observer broke"); }
  void on_run_end(const ro::RunEndEvent& e) override { ended_aborted = e.aborted; }
};

TEST(Observer, AFailureDuringTheRunAbortsItAndItsEndSaysAborted) {
  ro::Executor ex(make_program());
  auto obs = std::make_shared<FailsOnRoot>();
  EXPECT_THROW(
      {
        try {
          ex.run(std::vector<int>{2, 1}, {.progress = false, .observers = {obs}});
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("observer broke"), std::string::npos) << e.what();
          throw;
        }
      },
      std::runtime_error);
  EXPECT_TRUE(obs->ended_aborted);
  EXPECT_FALSE(ex.closed());  // an aborted run keeps the executor
}

TEST(Observer, ANullObserverIsRejectedBeforeAnythingRuns) {
  ro::Executor ex(make_program());
  try {
    ex.run(std::vector<int>{1}, {.progress = false, .observers = {nullptr}});
    FAIL() << "a null observer was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("RunOptions.observers[0] is null"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(ex.closed());
  EXPECT_EQ(ex.run(std::vector<int>{1}, {.progress = false}).outputs[0].value().to_vector(),
            std::vector<int>{0});
}

TEST_F(ObserverFiles, AtomicWritesReplaceWholeFilesAndLeaveNoTemporary) {
  const fs::path target = dir_ / "out.txt";
  ro::write_file_atomically(target.string(), "first\n");
  ro::write_file_atomically(target.string(), "second\n");
  std::ifstream in(target);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "second\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1u);
  // A temporary left by a killed writer is recognised and removed; other files stay.
  std::ofstream(dir_ / (".out.txt" + std::string(ro::kAtomicTemporaryInfix) + "123-1")) << "x";
  std::ofstream(dir_ / ".keep") << "y";
  EXPECT_EQ(ro::remove_atomic_temporaries(dir_.string()), 1u);
  EXPECT_TRUE(fs::exists(dir_ / ".keep"));
  EXPECT_TRUE(fs::exists(target));
}

TEST_F(ObserverFiles, AnAtomicWriteIntoAMissingDirectoryNamesItAndWritesNothing) {
  const fs::path target = dir_ / "missing" / "out.txt";
  try {
    ro::write_file_atomically(target.string(), "x");
    FAIL() << "no error";
  } catch (const ro::ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find((dir_ / "missing").string()), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(target));
}

}  // namespace
