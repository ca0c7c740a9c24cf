// Self-sizing pools on the local executor (DESIGN 6.1.7): actors start and retire
// as the policy (or the random test hook) decides, and no Grain is lost or run twice; counts come
// from the UDFs' own logs, order from gates and observer events, never from durations.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/executor_testing.h"
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using executor_testing::Gate;
using executor_testing::TempDir;

namespace {

// What every actor of one stage did: values seen (with repeats) and constructors run.
struct StageLog {
  std::mutex mutex;
  std::map<int, int> seen;
  std::atomic<int> built{0};
  void add(int v) {
    std::lock_guard<std::mutex> lock(mutex);
    ++seen[v];
  }
  std::map<int, int> snapshot() {
    std::lock_guard<std::mutex> lock(mutex);
    return seen;
  }
};
using StageLogPtr = std::shared_ptr<StageLog>;

// Adds `add` to every value, logging it; the value `hold` waits for `gate` first. With
// `pause`, each value costs that long (a stage slow enough to be worth more actors).
struct Step {
  Step(StageLogPtr l, int a, std::shared_ptr<Gate> g, int h,
       std::chrono::milliseconds p = std::chrono::milliseconds(0))
      : log(std::move(l)), add(a), gate(std::move(g)), hold(h), pause(p) {
    log->built.fetch_add(1);
  }
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    for (int v : x) {
      if (v == hold && gate && !gate->wait(std::chrono::seconds(20)))
        throw std::runtime_error("watchdog");
      std::this_thread::sleep_for(pause);
      log->add(v);
      out.push_back(v + add);
    }
    return out;
  }
  StageLogPtr log;
  int add;
  std::shared_ptr<Gate> gate;
  int hold;
  std::chrono::milliseconds pause;
};

struct Throws {
  Throws() { throw std::runtime_error("weights missing"); }
  std::vector<int> run(ro::Column<int> x) { return {x.begin(), x.end()}; }
};

// Opens `gate` once a pool's target falls to 0, or once `constructors` reach `built`.
struct ResizeWatch : ro::RunObserver {
  std::shared_ptr<Gate> gate;
  int pool = -1;
  std::vector<std::string> reasons;  // every decision, "pool:from->to:reason"
  void on_pool_resize(const ro::PoolResizeEvent& e) override {
    reasons.push_back(fmt::format("{}:{}->{}:{}", e.pool, e.from, e.to, e.reason));
    if (e.pool == pool && e.to == 0 && gate) gate->open();
  }
};

ro::RunOptions quiet() {
  ro::RunOptions o;
  o.progress = false;
  return o;
}

std::vector<int> range(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

void expect_each_once(const std::map<int, int>& seen, const std::vector<int>& values) {
  ASSERT_EQ(seen.size(), values.size());
  for (int v : values) EXPECT_EQ(seen.at(v), 1) << "value " << v;
}

}  // namespace

TEST(DriverSizing, AStageWhoseWorkIsDoneRetiresToZeroWhileTheNextOneRuns) {
  auto first = std::make_shared<StageLog>();
  auto second = std::make_shared<StageLog>();
  auto gate = std::make_shared<Gate>();
  // The second stage's value 1000 waits until the first stage was sized down to nothing. The
  // first stage takes 50 ms a value: one actor would take 2 s for the 40 values, more than
  // an actor takes to start, so the policy wants more.
  ro::Module<Step> a =
      ro::Module<Step>(first, 1000, nullptr, -1, std::chrono::milliseconds(50)).auto_replicas(0, 4);
  ro::Module<Step> b = ro::Module<Step>(second, 0, gate, 1000).auto_replicas(0, 3);
  auto program = ro::compile([&](ro::Port<int> x) { return b(a(x)); });
  auto watch = std::make_shared<ResizeWatch>();
  watch->gate = gate;
  watch->pool = 0;
  TempDir dir;
  ro::RunOptions o = quiet();
  o.observers = {watch};
  o.report_path = (dir.path() / "report.json").string();
  o.trace_path = (dir.path() / "trace.json").string();

  ro::LocalBackend backend;
  backend.budget.cpus = 8;
  ro::Executor ex(program, backend);
  const auto input = range(40);
  auto r = ex.run(input, o);
  for (std::size_t i = 0; i < input.size(); ++i) {
    ASSERT_TRUE(r.outputs[i].ok());
    EXPECT_EQ(r.outputs[i].value(), input[i] + 1000);
  }
  expect_each_once(first->snapshot(), input);
  std::vector<int> shifted;
  for (int v : input) shifted.push_back(v + 1000);
  expect_each_once(second->snapshot(), shifted);

  // The first pool went to 0 because nothing more could reach it; it grew by more than one
  // actor at once when the backlog appeared.
  const ro::PoolMetrics& pa = r.metrics.pools[0];
  ASSERT_FALSE(pa.resizes.empty());
  EXPECT_TRUE(std::any_of(pa.resizes.begin(), pa.resizes.end(), [](const auto& z) {
    return z.to == 0 && z.reason == "nothing more can reach it";
  }));
  EXPECT_TRUE(std::any_of(pa.resizes.begin(), pa.resizes.end(),
                          [](const auto& z) { return z.to - z.from >= 2; }));
  ASSERT_FALSE(pa.actors_over_time.empty());
  EXPECT_EQ(pa.actors_over_time.back().second, 0);

  // The decisions are in the report and the trace.
  std::ifstream report_file(dir.path() / "report.json");
  const auto report = nlohmann::json::parse(report_file);
  ASSERT_TRUE(report["pools"][0].contains("resizes"));
  EXPECT_FALSE(report["pools"][0]["resizes"].empty());
  std::ifstream trace_file(dir.path() / "trace.json");
  const auto trace = nlohmann::json::parse(trace_file);
  int resizes = 0;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev.value("name", "") == "pool resize") ++resizes;
  }
  EXPECT_EQ(resizes, static_cast<int>(r.metrics.pools[0].resizes.size() +
                                      r.metrics.pools[1].resizes.size()));
}

TEST(DriverSizing, RandomResizesNeverLoseOrDuplicateAGrain) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    auto first = std::make_shared<StageLog>();
    auto second = std::make_shared<StageLog>();
    auto gate = std::make_shared<Gate>();
    // Value 0 of the first stage waits until its actors were started often enough that some
    // were retired and started again (4 slots, 7 constructors).
    ro::Module<Step> a = ro::Module<Step>(first, 1, gate, 0).auto_replicas(1, 4).batch_size(2);
    ro::Module<Step> b = ro::Module<Step>(second, 1, nullptr, -1).auto_replicas(0, 3).batch_size(3);
    auto program = ro::compile([&](ro::Port<int> x) { return b(a(x)); });
    ro::LocalBackend backend;
    backend.random_resize_seed = seed;
    ro::Executor ex(program, backend);
    std::thread opener([&] {
      for (int i = 0; i < 2000 && first->built.load() < 7; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      gate->open();
    });
    const auto input = range(200);
    ro::RunOptions o = quiet();
    o.input_batch_size = 50;
    o.max_active_input_batches = 2;
    auto r = ex.run(input, o);
    opener.join();
    EXPECT_GE(first->built.load(), 7) << "seed " << seed;
    for (std::size_t i = 0; i < input.size(); ++i) {
      ASSERT_TRUE(r.outputs[i].ok());
      EXPECT_EQ(r.outputs[i].value(), input[i] + 2);
    }
    expect_each_once(first->snapshot(), input);
    std::vector<int> shifted;
    for (int v : input) shifted.push_back(v + 1);
    expect_each_once(second->snapshot(), shifted);
  }
}

TEST(DriverSizing, ASelfSizingPoolWhoseEveryActorFailsIsAnErrorNamingTheModule) {
  ro::Module<Throws> m = ro::Module<Throws>().auto_replicas(0, 3);
  auto program = ro::compile([&](ro::Port<int> x) { return m(x); });
  ro::Executor ex(program);
  const std::vector<int> input = {1, 2, 3};
  try {
    ex.run(input, quiet());
    FAIL() << "expected ExecutionError";
  } catch (const ro::ExecutionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no actor of Module<Throws> could start (1 of 1 failed)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("weights missing"), std::string::npos) << what;
  }
}

TEST(DriverSizing, AMinimumThatCannotFitTheBudgetIsAnErrorNamingItsHolders) {
  auto log = std::make_shared<StageLog>();
  ro::Module<Step> render = ro::Module<Step>(log, 0, nullptr, -1).replicas(1).gpus(1);
  ro::Module<Step> ocr = ro::Module<Step>(log, 0, nullptr, -1).auto_replicas(2, 4).gpus(1);
  auto program = ro::compile([&](ro::Port<int> x) { return ocr(render(x)); });
  ro::LocalBackend backend;
  backend.budget.cpus = 8;
  backend.budget.gpus = 2;
  try {
    ro::Executor ex(program, backend);
    FAIL() << "expected ExecutionError";
  } catch (const ro::ExecutionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Module<Step/1> sizes itself with min_replicas=2"), std::string::npos)
        << what;
    EXPECT_NE(what.find("the budget's GPU: 1 of 2 in use by 'Step/0' (1)"), std::string::npos)
        << what;
  }
}

TEST(DriverSizing, OptionsOfSelfSizingPoolsAreCheckedAtCompile) {
  auto log = std::make_shared<StageLog>();
  ro::Module<Step> bad = ro::Module<Step>(log, 0, nullptr, -1).auto_replicas(3, 2);
  EXPECT_THROW(
      {
        try {
          ro::compile([&](ro::Port<int> x) { return bad(x); });
        } catch (const ro::CompileError& e) {
          EXPECT_NE(std::string(e.what()).find("min_replicas (3) is above max_replicas (2)"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      ro::CompileError);
  ro::Module<Step> fixed = ro::Module<Step>(log, 0, nullptr, -1).replicas(2);
  fixed.auto_replicas(1, 3).replicas(2);  // min/max left over from auto, replicas fixed again
  EXPECT_THROW(ro::compile([&](ro::Port<int> x) { return fixed(x); }), ro::CompileError);
}
