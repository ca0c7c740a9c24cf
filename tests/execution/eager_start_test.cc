// Eager start (DESIGN 6.1.4): the local executor returns while its actors' constructors run,
// work starts on the first ready actor, an actor whose constructor throws stays out of its
// pool, and a pool whose every constructor throws is an error naming the Module. Order is
// asserted from event logs and gates, never from durations.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/executor_testing.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using executor_testing::Gate;
using executor_testing::TempDir;

namespace {

// Every value times two: what each UDF here computes, and what the tests expect.
template <class Values>
std::vector<int> doubled(const Values& in) {
  std::vector<int> out;
  for (int v : in) out.push_back(v * 2);
  return out;
}

// What the actors of one test did, in the order they did it.
struct Log {
  std::mutex mutex;
  std::vector<std::string> events;
  std::atomic<int> built{0};     // constructors entered
  std::atomic<int> finished{0};  // constructors returned
  Gate slow;                     // the slow constructors wait for it

  void add(std::string e) {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(std::move(e));
  }
  std::vector<std::string> snapshot() {
    std::lock_guard<std::mutex> lock(mutex);
    return events;
  }
};
using LogPtr = std::shared_ptr<Log>;

std::ptrdiff_t position(const std::vector<std::string>& events, const std::string& e) {
  return std::find(events.begin(), events.end(), e) - events.begin();
}

// The first actor to start is quick; every other one waits for the gate, which the first RPC
// opens. Had the executor waited for every constructor, the gate's watchdog would expire
// first and "slow ready" would come before "first rpc".
struct SlowToLoad {
  explicit SlowToLoad(LogPtr l) : log(std::move(l)) {
    if (log->built.fetch_add(1) > 0) {
      if (!log->slow.wait(std::chrono::seconds(5))) log->add("watchdog");
      log->add("slow ready");
    }
    log->finished.fetch_add(1);
  }
  std::vector<int> run(ro::Column<int> x) {
    if (!log->slow.is_open()) {
      log->add("first rpc");
      log->slow.open();
      // Every actor's start is then known before this run ends, for the metrics below.
      while (log->finished.load() < 3) std::this_thread::yield();
    }
    return doubled(x);
  }
  LogPtr log;
};

// Records the actors' starts the driver reports.
struct StartObserver : ro::RunObserver {
  std::vector<std::pair<int, std::string>> starts;  // (actor, error)
  void on_actor_start(const ro::ActorStartEvent& e) override {
    starts.emplace_back(e.actor, std::string(e.error));
  }
};

ro::RunOptions quiet() {
  ro::RunOptions o;
  o.progress = false;
  return o;
}

template <class T>
std::vector<T> values_of(const std::vector<ro::Output<T>>& outputs) {
  std::vector<T> out;
  for (const auto& o : outputs) out.push_back(o.ok() ? o.value() : -1);
  return out;
}

}  // namespace

TEST(EagerStart, TheFirstGrainIsDispatchedBeforeTheSlowestConstructorFinishes) {
  auto log = std::make_shared<Log>();
  ro::Module<SlowToLoad> slow = ro::Module<SlowToLoad>(log).replicas(3).batch_size(1);
  auto program = ro::compile([&](ro::Port<int> x) { return slow(x); });
  TempDir dir;
  auto observer = std::make_shared<StartObserver>();
  ro::RunOptions o = quiet();
  o.observers = {observer};
  o.trace_path = (dir.path() / "trace.json").string();
  o.report_path = (dir.path() / "report.json").string();

  ro::Executor ex(program);  // returns while two constructors wait for the gate
  const std::vector<int> input = {1, 2, 3, 4, 5};
  auto r = ex.run(input, o);
  EXPECT_EQ(values_of(r.outputs), doubled(input));

  const auto events = log->snapshot();
  ASSERT_EQ(std::count(events.begin(), events.end(), "slow ready"), 2);
  EXPECT_EQ(std::count(events.begin(), events.end(), "watchdog"), 0);
  EXPECT_LT(position(events, "first rpc"), position(events, "slow ready"));

  // Every start is in the metrics, the observer's events and the trace; the quick actor
  // came first.
  ASSERT_EQ(r.metrics.pools.size(), 1u);
  const ro::PoolMetrics& pool = r.metrics.pools[0];
  EXPECT_EQ(pool.pool, "SlowToLoad");
  EXPECT_EQ(pool.actors, 3);
  ASSERT_EQ(pool.started.size(), 3u);
  for (const auto& s : pool.started) EXPECT_TRUE(s.error.empty()) << s.error;
  EXPECT_LE(pool.started[0].started_seconds, pool.started[1].started_seconds);
  EXPECT_LE(pool.started[1].started_seconds, pool.started[2].started_seconds);
  ASSERT_EQ(observer->starts.size(), 3u);
  EXPECT_EQ(observer->starts[0].first, pool.started[0].actor);

  std::ifstream trace_file(dir.path() / "trace.json");
  const auto trace = nlohmann::json::parse(trace_file);
  int instants = 0;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev["ph"] == "i" && ev["name"] == "actor ready") ++instants;
  }
  EXPECT_EQ(instants, 3);
  std::ifstream report_file(dir.path() / "report.json");
  const auto report = nlohmann::json::parse(report_file);
  ASSERT_EQ(report["pools"].size(), 1u);
  EXPECT_EQ(report["pools"][0]["started"].size(), 3u);

  // A later run reports no start again (each actor starts once per executor), but its
  // metrics still list every start.
  auto observer2 = std::make_shared<StartObserver>();
  o.observers = {observer2};
  auto again = ex.run(input, o);
  EXPECT_EQ(values_of(again.outputs), doubled(input));
  EXPECT_TRUE(observer2->starts.empty());
  EXPECT_EQ(again.metrics.pools[0].started.size(), 3u);
}

namespace {

// The first actor of `Stage` that starts does the work; the downstream pool's constructor
// waits until upstream work ran, so the upstream pool worked while it was loading.
struct Upstream {
  explicit Upstream(LogPtr l) : log(std::move(l)) {}
  std::vector<int> run(ro::Column<int> x) {
    log->add("upstream rpc");
    log->slow.open();
    return x.to_vector();
  }
  LogPtr log;
};

struct Downstream {
  explicit Downstream(LogPtr l) : log(std::move(l)) {
    if (!log->slow.wait(std::chrono::seconds(5))) log->add("watchdog");
    log->add("downstream ready");
  }
  std::vector<int> run(ro::Column<int> x) { return doubled(x); }
  LogPtr log;
};

}  // namespace

TEST(EagerStart, UpstreamWorkRunsWhileADownstreamPoolIsStillLoading) {
  auto log = std::make_shared<Log>();
  ro::Module<Upstream> up = ro::Module<Upstream>(log).replicas(2);
  ro::Module<Downstream> down = ro::Module<Downstream>(log).replicas(2);
  auto program = ro::compile([&](ro::Port<int> x) { return down(up(x)); });
  ro::Executor ex(program);
  const std::vector<int> input = {4, 5, 6};
  auto r = ex.run(input, quiet());
  EXPECT_EQ(values_of(r.outputs), doubled(input));
  const auto events = log->snapshot();
  EXPECT_EQ(std::count(events.begin(), events.end(), "watchdog"), 0);
  EXPECT_LT(position(events, "upstream rpc"), position(events, "downstream ready"));
}

namespace {

// Constructor number `fail_at` (counted across the pool, from 1) throws; `fail_at` 0: all.
struct Fragile {
  Fragile(LogPtr l, int fail_at) : log(std::move(l)) {
    const int n = log->built.fetch_add(1) + 1;
    if (fail_at == 0 || n == fail_at) throw std::runtime_error("weights file missing");
  }
  std::vector<int> run(ro::Column<int> x) { return doubled(x); }
  LogPtr log;
};

}  // namespace

TEST(EagerStart, OneOfTwoConstructorsThrowingLeavesThePoolToTheOther) {
  auto log = std::make_shared<Log>();
  ro::Module<Fragile> fragile = ro::Module<Fragile>(log, 2).replicas(2).batch_size(2);
  auto program = ro::compile([&](ro::Port<int> x) { return fragile(x); });
  auto observer = std::make_shared<StartObserver>();
  ro::RunOptions o = quiet();
  o.observers = {observer};
  ro::Executor ex(program);
  std::vector<int> input(9);
  for (int i = 0; i < 9; ++i) input[i] = i;
  auto r = ex.run(input, o);
  EXPECT_EQ(values_of(r.outputs), doubled(input));
  // A run waits for nothing but the first ready actor, so the failed start may come to the
  // driver's notice in a later run; each run's metrics list every start known by its end.
  for (int k = 0; k < 200 && r.metrics.pools[0].started.size() < 2; ++k) {
    r = ex.run(input, o);
    EXPECT_EQ(values_of(r.outputs), doubled(input));
  }
  EXPECT_FALSE(ex.closed());
  ASSERT_EQ(r.metrics.pools[0].started.size(), 2u);
  int failed = 0;
  for (const auto& s : r.metrics.pools[0].started) {
    if (s.error.empty()) continue;
    ++failed;
    EXPECT_NE(s.error.find("Module<Fragile>"), std::string::npos) << s.error;
    EXPECT_NE(s.error.find("weights file missing"), std::string::npos) << s.error;
  }
  EXPECT_EQ(failed, 1);
  ASSERT_EQ(observer->starts.size(), 2u);  // over every run, each start once
  EXPECT_EQ(std::count_if(observer->starts.begin(), observer->starts.end(),
                          [](const auto& s) { return !s.second.empty(); }),
            1);
}

TEST(EagerStart, APoolWhoseEveryConstructorThrowsIsAnErrorNamingTheModule) {
  auto log = std::make_shared<Log>();
  auto healthy_log = std::make_shared<Log>();
  ro::Module<Upstream> healthy = ro::Module<Upstream>(healthy_log).replicas(2);
  ro::Module<Fragile> fragile = ro::Module<Fragile>(log, 0).replicas(3);
  auto program = ro::compile([&](ro::Port<int> x) { return fragile(healthy(x)); });
  ro::Executor ex(program);
  try {
    ex.run(std::vector<int>{1, 2, 3}, quiet());
    FAIL() << "a pool without actors ran";
  } catch (const ro::ExecutionError& e) {
    const std::string what = e.what();
    EXPECT_NE(
        what.find("no actor of Module<Fragile> could start (3 of 3 failed); the first error: "),
        std::string::npos)
        << what;
    EXPECT_NE(what.find("the constructor of Module<Fragile> threw std::runtime_error: weights "
                        "file missing"),
              std::string::npos)
        << what;
  }
  EXPECT_TRUE(ex.closed());
  EXPECT_EQ(log->built.load(), 3);
}

TEST(EagerStart, AwaitActorsReportsAPoolWithoutActorsBeforeAnyRun) {
  auto log = std::make_shared<Log>();
  ro::Module<Fragile> fragile = ro::Module<Fragile>(log, 0).replicas(2);
  auto program = ro::compile([&](ro::Port<int> x) { return fragile(x); });
  ro::Executor ex(program);
  try {
    ex.await_actors();
    FAIL() << "a pool without actors was reported ready";
  } catch (const ro::ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("no actor of Module<Fragile> could start (2 of 2 failed)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(ex.closed());
}

TEST(EagerStart, StartsSeenByAwaitActorsReachTheNextRunOnce) {
  auto log = std::make_shared<Log>();
  ro::Module<Fragile> fragile = ro::Module<Fragile>(log, -1);  // never throws
  auto program = ro::compile([&](ro::Port<int> x) { return fragile(x); });
  ro::Executor ex(program);
  ex.await_actors();  // the one actor is ready now: nothing to wait for in the run
  auto observer = std::make_shared<StartObserver>();
  ro::RunOptions o = quiet();
  o.observers = {observer};
  auto r = ex.run(std::vector<int>{1, 2}, o);
  EXPECT_EQ(values_of(r.outputs), (std::vector<int>{2, 4}));
  ASSERT_EQ(r.metrics.pools[0].started.size(), 1u);  // recorded once
  ASSERT_EQ(observer->starts.size(), 1u);            // announced in this run
  EXPECT_TRUE(observer->starts[0].second.empty());
  EXPECT_GE(r.metrics.pools[0].started[0].started_seconds, 0.0);
}
