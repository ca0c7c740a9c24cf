// Integration tests of the embedded local executor (DESIGN 3.4 and 6) through ro::Executor:
// runs, metrics, files and progress. Empty and repeated runs keep separate metrics, programs
// without Calls finish, invalid options and close() leave the executor in a known state, the
// metrics are consistent, the trace and report files are valid JSON, and progress is shown on
// a terminal only.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/executor_testing.h"
#include "support/local_executor_testing.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace ro = rayorch;
using executor_testing::TempDir;
using local_executor_testing::Counted;
using local_executor_testing::expected_sums;
using local_executor_testing::quiet;
using local_executor_testing::Split;
using local_executor_testing::Stats;
using local_executor_testing::Sum;
using local_executor_testing::total_rpcs;
using local_executor_testing::values_of;

// ---- Runs, metrics and files ----------------------------------------------------------

TEST(LocalExecutor, EmptyInputAndRepeatedRunsKeepSeparateMetrics) {
  auto stats = std::make_shared<Stats>();
  ro::Module<Split> split;
  ro::Module<Counted> pages = ro::Module<Counted>(stats).replicas(2);
  ro::Module<Sum> sum;
  auto program = ro::compile(
      [&](ro::Port<int> doc) { return sum(ro::F::reduce(pages(ro::F::expand(split(doc))))); });
  ro::Executor ex(program);

  auto empty = ex.run({}, quiet());
  EXPECT_TRUE(empty.outputs.empty());
  EXPECT_TRUE(empty.metrics.root_completed_seconds.empty());
  EXPECT_EQ(total_rpcs(empty.metrics), 0u);

  const std::vector<int> first{2, 3, 1};  // 3 split RPCs + 6 page RPCs + 3 sum RPCs
  const std::vector<int> second{4, 10};   // 2 split RPCs + 4 page RPCs + 2 sum RPCs
  auto a = ex.run(first, quiet());
  auto b = ex.run(second, quiet());
  EXPECT_EQ(values_of(a.outputs), expected_sums(first, 1));
  EXPECT_EQ(values_of(b.outputs), expected_sums(second, 1));
  EXPECT_EQ(total_rpcs(a.metrics), 12u);
  EXPECT_EQ(total_rpcs(b.metrics), 8u);
  EXPECT_EQ(b.metrics.calls[1].grain_dispatches, 4u);
  EXPECT_EQ(b.metrics.root_completed_seconds.size(), 2u);
  EXPECT_EQ(stats->constructed.load(), 2);
}

// A program without a Call has no actor to wait for: its outputs follow from the sources
// (once, every run waited forever for an actor of a Call that reads them).
TEST(LocalExecutor, AProgramWithoutCallsFinishesOnEveryExecutor) {
  auto same = ro::compile([](ro::Port<int> x) { return x; });
  auto kept =
      ro::compile([](ro::Port<int> x, ro::Port<bool> keep) { return ro::F::filter(x, keep); });
  ro::RunOptions o = quiet();
  o.input_batch_size = 2;  // several input batches, admitted and retired in turn
  {
    ro::Executor ex(same);
    EXPECT_EQ(values_of(ex.run({4, 5, 6, 7, 8}, o).outputs), (std::vector<int>{4, 5, 6, 7, 8}));
    EXPECT_TRUE(ex.run({}, o).outputs.empty());
  }
  ro::testing::SyncExecutor sync(same);
  EXPECT_EQ(values_of(sync.run({1, 2}, o).outputs), (std::vector<int>{1, 2}));

  ro::Executor ex(kept);
  auto r = ex.run(std::vector<int>{1, 2, 3}, std::vector<bool>{true, false, true}, o);
  ASSERT_EQ(r.outputs.size(), 3u);
  EXPECT_EQ(r.outputs[0].value(), 1);
  EXPECT_EQ(r.outputs[1].issue().outcome, ro::Outcome::dropped);
  EXPECT_EQ(r.outputs[2].value(), 3);
  EXPECT_EQ(total_rpcs(r.metrics), 0u);
}

TEST(LocalExecutor, InvalidRunOptionsAreRejectedWithoutClosingTheExecutor) {
  ro::Module<Split> split;
  ro::Module<Sum> sum;
  auto program =
      ro::compile([&](ro::Port<int> doc) { return sum(ro::F::reduce(ro::F::expand(split(doc)))); });
  ro::Executor ex(program);
  ro::RunOptions o = quiet();
  o.max_active_input_batches = 0;
  EXPECT_THROW(ex.run({1, 2}, o), std::invalid_argument);
  EXPECT_FALSE(ex.closed());
  auto r = ex.run({12}, quiet());
  EXPECT_EQ(r.outputs[0].value(), 1200 + 1201);
}

TEST(LocalExecutor, CloseIsIdempotentAndAClosedExecutorRefusesToRun) {
  auto stats = std::make_shared<Stats>();
  ro::Module<Counted> counted = ro::Module<Counted>(stats).replicas(2);
  auto program = ro::compile([&](ro::Port<int> x) { return counted(x); });
  ro::Executor ex(program);
  EXPECT_FALSE(ex.closed());
  ex.close();
  EXPECT_TRUE(ex.closed());
  EXPECT_EQ(stats->destroyed.load(), 2);
  ex.close();
  EXPECT_TRUE(ex.closed());
  EXPECT_EQ(stats->destroyed.load(), 2);
  try {
    ex.run({1}, quiet());
    FAIL() << "a closed executor ran";
  } catch (const ro::ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("closed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(stats->calls.load(), 0);
}

TEST(LocalExecutor, MetricsAreConsistent) {
  auto stats = std::make_shared<Stats>();
  ro::Module<Split> split = ro::Module<Split>().replicas(2).batch_size(3);
  ro::Module<Counted> pages = ro::Module<Counted>(stats).replicas(3).batch_size(5);
  ro::Module<Sum> sum = ro::Module<Sum>().batch_size(2);
  auto program = ro::compile(
      [&](ro::Port<int> doc) { return sum(ro::F::reduce(pages(ro::F::expand(split(doc))))); });
  ro::Executor ex(program);
  std::vector<int> docs;
  for (int i = 0; i < 23; ++i) docs.push_back(i * 7 % 50);
  ro::RunOptions o = quiet();
  o.input_batch_size = 4;
  o.max_active_input_batches = 2;
  auto r = ex.run(docs, o);
  EXPECT_EQ(values_of(r.outputs), expected_sums(docs, 1));

  const ro::RunMetrics& m = r.metrics;
  EXPECT_EQ(m.root_completed_seconds.size(), docs.size());
  EXPECT_GE(m.peak_active_input_batches, 1u);
  EXPECT_LE(m.peak_active_input_batches, o.max_active_input_batches);
  ASSERT_EQ(m.input_batches.size(), 6u);
  std::size_t rows = 0;
  std::uint64_t batch_rpcs = 0;
  for (std::size_t i = 0; i < m.input_batches.size(); ++i) {
    EXPECT_EQ(m.input_batches[i].index, i);
    EXPECT_EQ(m.input_batches[i].first_row, rows);
    rows += m.input_batches[i].rows;
    batch_rpcs += m.input_batches[i].rpcs;
    EXPECT_LE(m.input_batches[i].admitted_seconds, m.input_batches[i].completed_seconds);
  }
  EXPECT_EQ(rows, docs.size());
  EXPECT_EQ(batch_rpcs, total_rpcs(m));
  ASSERT_EQ(m.calls.size(), 3u);
  const int batch_limits[] = {3, 5, 2};
  for (std::size_t c = 0; c < m.calls.size(); ++c) {
    std::uint64_t rpcs = 0, grains = 0;
    for (auto [size, count] : m.calls[c].batch_size_histogram) {
      EXPECT_GE(size, 1u);
      EXPECT_LE(size, static_cast<std::size_t>(batch_limits[c]));
      rpcs += count;
      grains += size * count;
    }
    EXPECT_EQ(rpcs, m.calls[c].rpcs) << m.calls[c].call;
    EXPECT_EQ(grains, m.calls[c].grain_dispatches) << m.calls[c].call;
    EXPECT_EQ(m.calls[c].failed_rpcs, 0u);
    EXPECT_EQ(m.calls[c].requeues, 0u);
  }
  EXPECT_EQ(m.calls[0].grain_dispatches, docs.size());
  EXPECT_EQ(m.calls[2].grain_dispatches, docs.size());
  std::size_t children = 0;
  for (int d : docs) children += static_cast<std::size_t>(d % 10);
  EXPECT_EQ(m.calls[1].grain_dispatches, children);
  EXPECT_EQ(m.calls[0].actors, 2);
  EXPECT_EQ(m.calls[1].actors, 3);
  EXPECT_EQ(m.calls[2].actors, 1);
}

TEST(LocalExecutor, TraceAndReportFilesAreValidJson) {
  auto stats = std::make_shared<Stats>();
  ro::Module<Split> split = ro::Module<Split>().batch_size(8);
  ro::Module<Counted> pages = ro::Module<Counted>(stats).replicas(2).batch_size(4);
  ro::Module<Sum> sum;
  auto program = ro::compile(
      [&](ro::Port<int> doc) { return sum(ro::F::reduce(pages(ro::F::expand(split(doc))))); });
  ro::Executor ex(program);
  TempDir dir;
  ro::RunOptions o = quiet();
  o.trace_path = dir.file("trace.json");
  o.report_path = dir.file("report.json");
  const std::vector<int> docs{3, 12, 25, 0, 7};
  auto r = ex.run(docs, o);
  EXPECT_EQ(values_of(r.outputs), expected_sums(docs, 1));

  nlohmann::json trace = nlohmann::json::parse(std::ifstream(o.trace_path));
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::map<std::string, std::uint64_t> events_per_call, rows_per_call;
  std::size_t widest = 0;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev["ph"] != "X") continue;
    ASSERT_TRUE(ev.contains("ts") && ev.contains("dur") && ev.contains("pid") &&
                ev.contains("tid"));
    const auto& args = ev["args"];
    ASSERT_TRUE(args.contains("call") && args.contains("batch_size") && args.contains("parents"));
    const std::string call = args["call"].get<std::string>();
    ++events_per_call[call];
    rows_per_call[call] += args["batch_size"].get<std::uint64_t>();
    if (call == r.metrics.calls[1].call)
      widest = std::max(widest, args["parents"].get<std::size_t>());
  }
  for (const auto& c : r.metrics.calls) {
    EXPECT_EQ(events_per_call[c.call], c.rpcs) << c.call;
    EXPECT_EQ(rows_per_call[c.call], c.grain_dispatches) << c.call;
  }
  // The split runs in one RPC, so the page Call's first batch mixes parents.
  EXPECT_GE(widest, 2u);

  nlohmann::json report = nlohmann::json::parse(std::ifstream(o.report_path));
  for (const char* key :
       {"elapsed_seconds", "calls", "input_batches", "peak_active_input_batches",
        "root_completed_seconds", "stale_reports_rejected", "actors_replaced", "values_rebuilt",
        "grains_reexecuted", "rebuild_seconds", "node_losses"}) {
    EXPECT_TRUE(report.contains(key)) << key;
  }
  ASSERT_EQ(report["calls"].size(), r.metrics.calls.size());
  for (std::size_t c = 0; c < r.metrics.calls.size(); ++c) {
    const auto& jc = report["calls"][c];
    EXPECT_EQ(jc["call"], r.metrics.calls[c].call);
    EXPECT_EQ(jc["rpcs"].get<std::uint64_t>(), r.metrics.calls[c].rpcs);
    EXPECT_EQ(jc["actors"].get<int>(), r.metrics.calls[c].actors);
    std::uint64_t hist = 0;
    for (const auto& [size, count] : jc["batch_size_histogram"].items()) {
      hist += count.get<std::uint64_t>();
    }
    EXPECT_EQ(hist, r.metrics.calls[c].rpcs);
  }
  EXPECT_EQ(report["root_completed_seconds"].size(), docs.size());
  EXPECT_EQ(report["input_batches"].size(), r.metrics.input_batches.size());
  // Written atomically: no temporary file is left behind.
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 2u);
}

// ---- Progress -------------------------------------------------------------------------

namespace {

// Redirects file descriptor 2 for the lifetime of the object.
class StderrRedirect {
 public:
  explicit StderrRedirect(int fd) {
    std::fflush(stderr);
    saved_ = ::dup(2);
    ::dup2(fd, 2);
  }
  ~StderrRedirect() { restore(); }
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  StderrRedirect(const StderrRedirect&) = delete;
  StderrRedirect& operator=(const StderrRedirect&) = delete;

 private:
  int saved_ = -1;
};

std::string read_all(int fd) {
  std::string out;
  char buffer[4096];
  pollfd p{fd, POLLIN, 0};
  // The first poll waits for the terminal to hand over what was written; later ones only
  // drain what is already there.
  int wait_ms = 5000;
  while (::poll(&p, 1, wait_ms) > 0 && (p.revents & POLLIN) != 0) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
    wait_ms = 50;
  }
  return out;
}

}  // namespace

TEST(LocalExecutor, ProgressIsSilentWhenStderrIsNotATerminal) {
  ro::Module<Split> split;
  ro::Module<Sum> sum;
  auto program =
      ro::compile([&](ro::Port<int> doc) { return sum(ro::F::reduce(ro::F::expand(split(doc)))); });
  ro::Executor ex(program);
  std::FILE* capture = std::tmpfile();
  ASSERT_NE(capture, nullptr);
  {
    StderrRedirect redirect(::fileno(capture));
    ro::RunOptions o;  // progress is on by default
    ASSERT_TRUE(o.progress);
    auto r = ex.run({1, 2, 3}, o);
    EXPECT_EQ(r.outputs.size(), 3u);
  }
  std::fseek(capture, 0, SEEK_END);
  EXPECT_EQ(std::ftell(capture), 0L) << "progress was written to a non-terminal stderr";
  std::fclose(capture);
}

TEST(LocalExecutor, ProgressIsShownOnATerminal) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0) {
    if (master >= 0) ::close(master);
    GTEST_SKIP() << "no pseudo-terminal available";
  }
  const int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(slave, 0);
  ro::Module<Split> split;
  ro::Module<Sum> sum;
  auto program =
      ro::compile([&](ro::Port<int> doc) { return sum(ro::F::reduce(ro::F::expand(split(doc)))); });
  ro::Executor ex(program);
  {
    StderrRedirect redirect(slave);
    auto r = ex.run({1, 2, 3}, ro::RunOptions{});
    EXPECT_EQ(r.outputs.size(), 3u);
    ro::RunOptions off;
    off.progress = false;
    ex.run({4}, off);
  }
  const std::string shown = read_all(master);
  ::close(slave);
  ::close(master);
  EXPECT_NE(shown.find("[rayorch] roots 3/3"), std::string::npos) << shown;
  // Each Call's Grains done, queued and in flight, abbreviated to the 80 columns of a
  // terminal that did not say its width.
  EXPECT_NE(shown.find("Sum#1 3 q0 f0"), std::string::npos) << shown;
  // The run with progress off printed nothing.
  EXPECT_EQ(shown.find("roots 1/1"), std::string::npos) << shown;
}
