// Integration tests of the embedded local executor (DESIGN 3.4 and 6) through ro::Executor:
// the actor lifecycle. Actors are built once per pool and reused across runs and input
// batches, a constructor that fails is reported and cleaned up, and one shared pool serves
// every Call of its Module.
#include <algorithm>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "support/local_executor_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using local_executor_testing::Counted;
using local_executor_testing::quiet;
using local_executor_testing::Stats;
using local_executor_testing::StatsPtr;
using local_executor_testing::values_of;

// ---- Actor lifecycle ------------------------------------------------------------------

TEST(LocalExecutor, ActorsAreBuiltOnceAndReusedAcrossRunsAndInputBatches) {
  auto stats = std::make_shared<Stats>();
  ro::Module<Counted> counted = ro::Module<Counted>(stats).replicas(3).batch_size(2);
  auto program = ro::compile([&](ro::Port<int> x) { return counted(x); });
  ro::Executor ex(program);
  // Pools start up front, each actor on its own thread (eager start: the first run does not
  // wait for them all); no run builds another.

  std::vector<int> input(10);
  std::iota(input.begin(), input.end(), 0);
  for (int round = 0; round < 3; ++round) {
    ro::RunOptions o = quiet();
    o.input_batch_size = static_cast<std::size_t>(round + 1);
    o.max_active_input_batches = 2;
    auto r = ex.run(input, o);
    std::vector<int> expected;
    for (int v : input) expected.push_back(v + 1);
    EXPECT_EQ(values_of(r.outputs), expected) << "round " << round;
    EXPECT_EQ(r.metrics.input_batches.size(), (input.size() + round) / (round + 1));
  }
  EXPECT_LE(stats->constructed.load(), 3);
  EXPECT_EQ(stats->destroyed.load(), 0);
  ex.close();
  EXPECT_EQ(stats->constructed.load(), 3);
  EXPECT_EQ(stats->destroyed.load(), 3);
}

// One constructor of three fails: the pool goes on with the other two (eager start, DESIGN
// 6.1; tests/execution/eager_start_test.cc has the rest).
TEST(LocalExecutor, ConstructorFailureIsReportedAndCleansUp) {
  struct Fragile {
    Fragile(StatsPtr s, int fail_at) : stats(std::move(s)) {
      if (++stats->constructed == fail_at) throw std::runtime_error("weights file missing");
    }
    ~Fragile() { ++stats->destroyed; }
    Fragile(const Fragile&) = delete;
    Fragile& operator=(const Fragile&) = delete;
    std::vector<int> run(ro::Column<int> x) { return x.to_vector(); }
    StatsPtr stats;
  };
  auto fragile_stats = std::make_shared<Stats>();
  auto healthy_stats = std::make_shared<Stats>();
  ro::Module<Counted> healthy = ro::Module<Counted>(healthy_stats).replicas(2);
  ro::Module<Fragile> fragile = ro::Module<Fragile>(fragile_stats, 2).replicas(3);
  auto program = ro::compile([&](ro::Port<int> x) { return fragile(healthy(x)); });
  {
    ro::Executor ex(program);
    std::vector<int> input = {1, 2, 3, 4};
    // Each run's metrics list the starts known by its end; the failed one may come later than
    // the first run (a run waits only for the first ready actor).
    auto fragile_starts = [](const ro::RunMetrics& m) {
      for (const auto& p : m.pools) {
        if (p.pool == "Fragile") return p.started;
      }
      return std::vector<ro::ActorStartMetrics>{};
    };
    ro::RunResult<int> r = ex.run(input, quiet());
    for (int k = 0; k < 200 && fragile_starts(r.metrics).size() < 3; ++k)
      r = ex.run(input, quiet());
    EXPECT_EQ(values_of(r.outputs), (std::vector<int>{2, 3, 4, 5}));
    ASSERT_EQ(fragile_starts(r.metrics).size(), 3u);
    std::string errors;
    for (const auto& s : fragile_starts(r.metrics)) errors += s.error;
    EXPECT_NE(errors.find("Module<Fragile>"), std::string::npos) << errors;
    EXPECT_NE(errors.find("weights file missing"), std::string::npos) << errors;
  }
  // Every built instance was destroyed on its own actor thread when the executor closed:
  // the threads were joined (an unjoined std::thread would also terminate the process).
  EXPECT_EQ(fragile_stats->constructed.load(), 3);
  EXPECT_EQ(fragile_stats->destroyed.load(), 2);
  EXPECT_EQ(healthy_stats->constructed.load(), 2);
  EXPECT_EQ(healthy_stats->destroyed.load(), 2);
}

TEST(LocalExecutor, SharedPoolServesBothCalls) {
  struct Tagged {
    explicit Tagged(StatsPtr s) : stats(std::move(s)), id(++stats->constructed) {}
    std::vector<int> run(ro::Column<int> x, int tag) {
      {
        std::lock_guard<std::mutex> lock(stats->mutex);
        stats->call_instances.emplace_back(tag, id);
      }
      std::vector<int> out;
      for (int v : x) out.push_back(v + tag);
      return out;
    }
    StatsPtr stats;
    int id;
  };
  auto stats = std::make_shared<Stats>();
  ro::Module<Tagged> tagged = ro::Module<Tagged>(stats).replicas(2);
  auto program = ro::compile([&](ro::Port<int> x) { return tagged(tagged(x, 1), 10); });
  ro::Executor ex(program);
  std::vector<int> input{0, 1, 2, 3, 4, 5, 6, 7};
  auto r = ex.run(input, quiet());
  for (std::size_t i = 0; i < input.size(); ++i) EXPECT_EQ(r.outputs[i].value(), input[i] + 11);

  ASSERT_EQ(r.metrics.calls.size(), 2u);
  EXPECT_EQ(r.metrics.calls[0].actors, 2);
  EXPECT_EQ(r.metrics.calls[1].actors, 2);
  EXPECT_EQ(r.metrics.calls[0].rpcs, input.size());
  EXPECT_EQ(r.metrics.calls[1].rpcs, input.size());
  // One pool of two actors for both Calls: two constructions (once the executor closed: the
  // run need not wait for the second), and every RPC of either Call ran on one of those two
  // instances.
  ex.close();
  EXPECT_EQ(stats->constructed.load(), 2);
  std::set<int> first, second;
  for (auto [tag, id] : stats->call_instances) (tag == 1 ? first : second).insert(id);
  EXPECT_EQ(stats->call_instances.size(), 2 * input.size());
  std::set<int> all = first;
  all.insert(second.begin(), second.end());
  EXPECT_FALSE(first.empty());
  EXPECT_FALSE(second.empty());
  EXPECT_TRUE(std::includes(std::set<int>{1, 2}.begin(), std::set<int>{1, 2}.end(), all.begin(),
                            all.end()));
}
