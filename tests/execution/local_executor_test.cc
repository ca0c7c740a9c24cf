// Integration tests of the embedded local executor (DESIGN 3.4 and 6) through ro::Executor.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/executor_testing.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace ro = rayorch;
using executor_testing::Gate;
using executor_testing::TempDir;

namespace {

// What the UDF instances of one test observed. Shared by every instance of a pool (the
// Module captures the shared_ptr and replays it on every actor).
struct Stats {
  std::atomic<int> constructed{0};
  std::atomic<int> destroyed{0};
  std::atomic<int> calls{0};
  std::mutex mutex;
  std::vector<std::vector<int>> batches;            // the values of each RPC
  std::vector<std::pair<int, int>> call_instances;  // (static tag, instance id) per RPC
};
using StatsPtr = std::shared_ptr<Stats>;

struct Counted {
  explicit Counted(StatsPtr s) : stats(std::move(s)), id(++stats->constructed) {}
  ~Counted() { ++stats->destroyed; }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  std::vector<int> run(ro::Column<int> x) {
    ++stats->calls;
    {
      std::lock_guard<std::mutex> lock(stats->mutex);
      stats->batches.push_back(x.to_vector());
    }
    std::vector<int> out;
    for (int v : x) out.push_back(v + 1);
    return out;
  }
  StatsPtr stats;
  int id;
};

// Children of a parent: value p*100+i for i < p % 10, so parent and ordinal are recoverable.
struct Split {
  std::vector<std::vector<int>> run(ro::Column<int> parents) {
    std::vector<std::vector<int>> out;
    for (int p : parents) {
      std::vector<int> children;
      for (int i = 0; i < p % 10; ++i) children.push_back(p * 100 + i);
      out.push_back(std::move(children));
    }
    return out;
  }
};

struct Sum {
  std::vector<int> run(ro::Column<ro::Group<int>> groups) {
    std::vector<int> out;
    for (const auto& g : groups) out.push_back(std::accumulate(g.begin(), g.end(), 0));
    return out;
  }
};

std::vector<int> expected_sums(const std::vector<int>& parents, int add) {
  std::vector<int> out;
  for (int p : parents) {
    int s = 0;
    for (int i = 0; i < p % 10; ++i) s += p * 100 + i + add;
    out.push_back(s);
  }
  return out;
}

template <class T>
std::vector<T> values_of(const std::vector<ro::Output<T>>& outputs) {
  std::vector<T> out;
  for (const auto& o : outputs) out.push_back(o.value());
  return out;
}

std::uint64_t total_rpcs(const ro::RunMetrics& m) {
  std::uint64_t n = 0;
  for (const auto& c : m.calls) n += c.rpcs;
  return n;
}

ro::RunOptions quiet() {
  ro::RunOptions o;
  o.progress = false;
  return o;
}

}  // namespace

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

// ---- Cross-parent batching and streaming ---------------------------------------------

TEST(LocalExecutor, CrossParentBatchesMixChildrenOfSeveralParents) {
  auto stats = std::make_shared<Stats>();
  ro::Module<Split> split = ro::Module<Split>().batch_size(16);
  ro::Module<Counted> pages = ro::Module<Counted>(stats).batch_size(8);
  ro::Module<Sum> sum;
  auto program = ro::compile(
      [&](ro::Port<int> doc) { return sum(ro::F::reduce(pages(ro::F::expand(split(doc))))); });
  ro::Executor ex(program);
  const std::vector<int> docs{3, 12, 23, 2, 31};  // 3, 2, 3, 2, 1 children
  auto r = ex.run(docs, quiet());
  EXPECT_EQ(values_of(r.outputs), expected_sums(docs, 1));

  bool mixed = false;
  std::size_t children = 0;
  for (const auto& batch : stats->batches) {
    std::set<int> parents;
    for (int v : batch) parents.insert(v / 100);
    mixed = mixed || parents.size() >= 2;
    children += batch.size();
  }
  EXPECT_TRUE(mixed) << "no RPC carried children of two different parents";
  EXPECT_EQ(children, 11u);
}

TEST(LocalExecutor, StreamingDeliversAFinishedDocumentWhileALongOneIsBlocked) {
  struct Shared {
    Gate gate;
    std::atomic<bool> watchdog_fired{false};
  };
  struct GatedPage {
    explicit GatedPage(std::shared_ptr<Shared> s) : shared(std::move(s)) {}
    std::vector<int> run(ro::Column<int> pages) {
      std::vector<int> out;
      for (int p : pages) {
        // Pages of document 3 (the long one) wait until the short one was delivered.
        if (p / 100 == 3 && !shared->gate.wait()) shared->watchdog_fired = true;
        out.push_back(p + 1);
      }
      return out;
    }
    std::shared_ptr<Shared> shared;
  };
  auto shared = std::make_shared<Shared>();
  ro::Module<Split> split;
  // One actor per long page plus one: the blocked pages cannot starve the short document.
  ro::Module<GatedPage> ocr = ro::Module<GatedPage>(shared).replicas(4);
  ro::Module<Sum> sum;
  auto program = ro::compile(
      [&](ro::Port<int> doc) { return sum(ro::F::reduce(ocr(ro::F::expand(split(doc))))); });
  ro::Executor ex(program);

  const std::vector<int> docs{3, 11};  // row 0: 3 pages (long), row 1: 1 page (short)
  std::vector<std::size_t> order;
  std::vector<int> values(2, -1);
  bool gate_open_at_short_delivery = true;
  auto r = ex.run(docs, quiet(), [&](std::size_t row, ro::Output<int> out) {
    order.push_back(row);
    values[row] = out.value();
    if (row == 1) {
      gate_open_at_short_delivery = shared->gate.is_open();
      shared->gate.open();
    }
  });
  EXPECT_TRUE(r.outputs.empty());
  EXPECT_EQ(order, (std::vector<std::size_t>{1, 0}));
  EXPECT_FALSE(gate_open_at_short_delivery);
  EXPECT_FALSE(shared->watchdog_fired.load());
  EXPECT_EQ(values, expected_sums(docs, 1));
  EXPECT_EQ(r.metrics.root_completed_seconds.size(), 2u);
  EXPECT_LE(r.metrics.root_completed_seconds[1], r.metrics.root_completed_seconds[0]);
}

TEST(LocalExecutor, ExceptionFromTheStreamingCallbackStopsTheRunCleanly) {
  auto stats = std::make_shared<Stats>();
  ro::Module<Counted> counted = ro::Module<Counted>(stats).replicas(3);
  auto program = ro::compile([&](ro::Port<int> x) { return counted(x); });
  ro::Executor ex(program);
  std::vector<int> input(30);
  std::iota(input.begin(), input.end(), 0);
  int delivered = 0;
  EXPECT_THROW(ex.run(input, quiet(),
                      [&](std::size_t, ro::Output<int>) {
                        if (++delivered == 3) throw std::runtime_error("sink is full");
                      }),
               std::runtime_error);
  EXPECT_EQ(delivered, 3);
  // The run stopped where it was; the executor keeps its actors and runs again.
  EXPECT_FALSE(ex.closed());
  EXPECT_EQ(stats->destroyed.load(), 0);
  EXPECT_EQ(ex.run(input, quiet()).outputs.size(), input.size());
  ex.close();  // joins the actors: every constructor has run, once
  EXPECT_EQ(stats->constructed.load(), 3);
}

// ---- Failures -------------------------------------------------------------------------

TEST(LocalExecutor, ContractErrorIsNeverRetriedAndNamesCallUdfAndSizes) {
  struct Short {
    explicit Short(StatsPtr s) : stats(std::move(s)) {}
    std::vector<int> run(ro::Column<int> x) {
      ++stats->calls;
      std::vector<int> out = x.to_vector();
      out.pop_back();
      return out;
    }
    StatsPtr stats;
  };
  auto stats = std::make_shared<Stats>();
  ro::Module<Short> bad =
      ro::Module<Short>(stats).batch_size(4).recovery(ro::RecoveryPolicy::retry_batch(3));
  auto program = ro::compile([&](ro::Port<int> x) { return bad(x); });
  ro::Executor ex(program);
  try {
    ex.run({1, 2, 3, 4}, quiet());
    FAIL() << "the contract error was not reported";
  } catch (const ro::ExecutionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Short#0"), std::string::npos) << what;
    EXPECT_NE(what.find("UDF Short"), std::string::npos) << what;
    EXPECT_NE(what.find("3 rows for 4 input rows"), std::string::npos) << what;
  }
  EXPECT_EQ(stats->calls.load(), 1);
  EXPECT_FALSE(ex.closed());  // an aborted run keeps the executor
  EXPECT_THROW(ex.run({1}, quiet()), ro::ExecutionError);
}

TEST(LocalExecutor, AbortPolicyNamesTheGrainsAndKeepsTheExecutor) {
  struct Boom {
    explicit Boom(std::shared_ptr<Gate> g) : gate(std::move(g)) {}
    std::vector<int> run(ro::Column<int> x) {
      if (x[0] == 2) throw std::runtime_error("kaboom");
      // Keep the other actors busy while the driver aborts, so the abort has to wait for
      // actors that still read their inputs.
      gate->wait(std::chrono::milliseconds(100));
      std::vector<int> out;
      for (int v : x) out.push_back(v * 2);
      return out;
    }
    std::shared_ptr<Gate> gate;
  };
  auto gate = std::make_shared<Gate>();
  ro::Module<Boom> boom = ro::Module<Boom>(gate).replicas(4);
  auto program = ro::compile([&](ro::Port<int> x) { return boom(x); });
  ro::Executor ex(program);
  try {
    ex.run({0, 1, 2, 3, 4, 5}, quiet());
    FAIL() << "the failure was not reported";
  } catch (const ro::ExecutionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Boom#0"), std::string::npos) << what;
    EXPECT_NE(what.find("[2 g0]"), std::string::npos) << what;
    EXPECT_NE(what.find("kaboom"), std::string::npos) << what;
  }
  EXPECT_FALSE(ex.closed());  // an aborted run keeps the executor and its actors
  EXPECT_EQ(ex.run({1}, quiet()).outputs[0].value(), 2);
  ex.close();
  EXPECT_TRUE(ex.closed());
}

TEST(LocalExecutor, ActorLostReplacesTheActorAndReplaysTheSameGrains) {
  struct Flaky {
    explicit Flaky(StatsPtr s) : stats(std::move(s)) { ++stats->constructed; }
    std::vector<int> run(ro::Column<int> x) {
      {
        std::lock_guard<std::mutex> lock(stats->mutex);
        stats->batches.push_back(x.to_vector());
      }
      if (++stats->calls == 1) throw ro::ActorLost("the device went away");
      std::vector<int> out;
      for (int v : x) out.push_back(v * 3);
      return out;
    }
    StatsPtr stats;
  };
  auto stats = std::make_shared<Stats>();
  ro::Module<Flaky> flaky = ro::Module<Flaky>(stats).batch_size(3);
  auto program = ro::compile([&](ro::Port<int> x) { return flaky(x); });
  ro::Executor ex(program);
  const std::vector<int> input{1, 2, 3, 4, 5, 6, 7};
  auto r = ex.run(input, quiet());
  std::vector<int> expected;
  for (int v : input) expected.push_back(v * 3);
  EXPECT_EQ(values_of(r.outputs), expected);
  EXPECT_EQ(stats->constructed.load(), 2);
  EXPECT_EQ(r.metrics.actors_replaced, 1u);
  EXPECT_EQ(r.metrics.calls[0].failed_rpcs, 1u);
  EXPECT_EQ(r.metrics.calls[0].requeues, 3u);
  ASSERT_GE(stats->batches.size(), 2u);
  // The replay is the exact lost batch, served before any other READY work.
  EXPECT_EQ(stats->batches[0], stats->batches[1]);
}

namespace {

// Fails a batch on the first attempt that contains a transient value, and on every attempt
// that contains a poisoned value.
struct PoisonState {
  std::mutex mutex;
  std::set<int> transient;
  std::set<int> poisoned;
  std::set<int> attempted;
};

struct Poison {
  explicit Poison(std::shared_ptr<PoisonState> s) : state(std::move(s)) {}
  std::vector<int> run(ro::Column<int> x) {
    std::string error;
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      for (int v : x) {
        if (state->poisoned.count(v) != 0) {
          if (error.empty()) error = "poison " + std::to_string(v);
        } else if (state->transient.count(v) != 0 && state->attempted.insert(v).second) {
          if (error.empty()) error = "transient " + std::to_string(v);
        }
      }
    }
    if (!error.empty()) throw std::runtime_error(error);
    std::vector<int> out;
    for (int v : x) out.push_back(v * 7);
    return out;
  }
  std::shared_ptr<PoisonState> state;
};

}  // namespace

TEST(LocalExecutor, RecoveryPoliciesGiveTheSameOutputsAsTheSyncExecutor) {
  struct Case {
    const char* name;
    ro::RecoveryPolicy policy;
    std::set<int> poisoned;
  };
  const std::vector<Case> cases{
      {"retry_batch", ro::RecoveryPolicy::retry_batch(1), {}},
      {"retry_tail", ro::RecoveryPolicy::retry_tail(1), {}},
      {"isolate_tail", ro::RecoveryPolicy::isolate_tail(), {7, 15}},
  };
  std::vector<int> input(20);
  std::iota(input.begin(), input.end(), 0);
  for (const Case& c : cases) {
    auto make_state = [&] {
      auto s = std::make_shared<PoisonState>();
      s->transient = {1, 6, 12, 13, 19};
      s->poisoned = c.poisoned;
      return s;
    };
    auto sync_state = make_state();
    auto local_state = make_state();
    ro::Module<Poison> sync_mod = ro::Module<Poison>(sync_state).batch_size(4).recovery(c.policy);
    ro::Module<Poison> local_mod =
        ro::Module<Poison>(local_state).batch_size(4).replicas(3).recovery(c.policy);
    auto sync_program = ro::compile([&](ro::Port<int> x) { return sync_mod(x); });
    auto local_program = ro::compile([&](ro::Port<int> x) { return local_mod(x); });
    ro::testing::SyncExecutor sync(sync_program);
    ro::Executor local(local_program);
    auto expected = sync.run(input, quiet());
    ro::RunOptions o = quiet();
    o.input_batch_size = 6;
    o.max_active_input_batches = 2;
    auto actual = local.run(input, o);
    executor_testing::expect_same_outputs(expected.outputs, actual.outputs, {}, c.name);
    EXPECT_GE(actual.metrics.calls[0].failed_rpcs, 1u) << c.name;
    for (int v : input) {
      const auto& out = actual.outputs[static_cast<std::size_t>(v)];
      if (c.poisoned.count(v) != 0) {
        ASSERT_FALSE(out.ok()) << c.name << " " << v;
        EXPECT_EQ(out.issue().outcome, ro::Outcome::failed);
        EXPECT_NE(out.issue().cause.find("poison " + std::to_string(v)), std::string::npos)
            << out.issue().cause;
      } else {
        ASSERT_TRUE(out.ok()) << c.name << " " << v;
        EXPECT_EQ(out.value(), v * 7);
      }
    }
  }
}

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

// ---- Timeouts -------------------------------------------------------------------------

namespace {

// Hangs on the first attempt at `hang_value` until the gate opens; signals when the hung
// instance is finally destroyed (its abandoned actor thread has exited).
struct HangState {
  explicit HangState(int v) : hang_value(v) {}
  int hang_value;
  Gate release;
  Gate hung_instance_gone;
  std::atomic<bool> hung{false};
  std::atomic<int> hung_instance{0};
  std::atomic<int> constructed{0};
  std::atomic<bool> watchdog_fired{false};
};

struct Hangs {
  explicit Hangs(std::shared_ptr<HangState> s) : state(std::move(s)), id(++state->constructed) {}
  ~Hangs() {
    if (state->hung_instance.load() == id) state->hung_instance_gone.open();
  }
  Hangs(const Hangs&) = delete;
  Hangs& operator=(const Hangs&) = delete;
  std::vector<int> run(ro::Column<int> x) {
    for (int v : x) {
      if (v == state->hang_value && !state->hung.exchange(true)) {
        state->hung_instance = id;
        if (!state->release.wait()) state->watchdog_fired = true;
      }
    }
    // Read the inputs after the hang: an abandoned attempt keeps its input storage alive.
    std::vector<int> out;
    for (int v : x) out.push_back(v * 2);
    return out;
  }
  std::shared_ptr<HangState> state;
  int id;
};

}  // namespace

TEST(LocalExecutor, TimedOutRpcIsReplayedAndItsLateReportRejected) {
  // The hung attempt is the run's first RPC (batch id 1), so its late report names a batch
  // id that the next run's engine also hands out: only the run fence can tell them apart.
  auto state = std::make_shared<HangState>(0);
  ro::Module<Hangs> hangs =
      ro::Module<Hangs>(state).replicas(2).timeout(std::chrono::milliseconds(150)).infra_retries(3);
  auto program = ro::compile([&](ro::Port<int> x) { return hangs(x); });
  ro::Executor ex(program);
  std::vector<int> input(10);
  std::iota(input.begin(), input.end(), 0);
  auto r = ex.run(input, quiet());
  ASSERT_EQ(r.outputs.size(), input.size());
  for (int v : input) EXPECT_EQ(r.outputs[static_cast<std::size_t>(v)].value(), v * 2);
  EXPECT_GE(r.metrics.actors_replaced, 1u);
  EXPECT_GE(r.metrics.calls[0].failed_rpcs, 1u);
  EXPECT_FALSE(state->hung_instance_gone.is_open());

  // Release the abandoned attempt and wait until its thread has reported and exited.
  state->release.open();
  ASSERT_TRUE(state->hung_instance_gone.wait());
  EXPECT_FALSE(state->watchdog_fired.load());
  // Its late report is rejected by the next run rather than committed there.
  auto again = ex.run({1, 2}, quiet());
  EXPECT_EQ(values_of(again.outputs), (std::vector<int>{2, 4}));
  EXPECT_GE(again.metrics.stale_reports_rejected, 1u);
  // Closing joins every live actor, the replacement included, after its constructor ran.
  ex.close();
  EXPECT_GE(state->constructed.load(), 3);
}

TEST(LocalExecutor, ReleasingAHungAttemptAfterTheExecutorIsGoneIsSafe) {
  auto state = std::make_shared<HangState>(2);
  {
    ro::Module<Hangs> hangs = ro::Module<Hangs>(state)
                                  .replicas(2)
                                  .batch_size(2)
                                  .timeout(std::chrono::milliseconds(150))
                                  .infra_retries(3);
    auto program = ro::compile([&](ro::Port<int> x) { return hangs(x); });
    ro::Executor ex(program);
    auto r = ex.run({0, 1, 2, 3, 4}, quiet());
    EXPECT_EQ(values_of(r.outputs), (std::vector<int>{0, 2, 4, 6, 8}));
    EXPECT_GE(r.metrics.actors_replaced, 1u);
  }
  // The executor, its plan handle and its pools are gone; the detached thread owns what it
  // still needs and exits cleanly once released.
  EXPECT_FALSE(state->hung_instance_gone.is_open());
  state->release.open();
  EXPECT_TRUE(state->hung_instance_gone.wait());
}

namespace {

// Hangs on every attempt at the value 2 until the test opens `release`: a Grain that no replay
// can finish. Counts the instances stuck in run() so the test can wait for their threads.
struct HangForeverState {
  Gate release;
  std::atomic<int> hanging{0};
  std::atomic<int> hung_attempts{0};
  std::atomic<int> constructed{0};
};

struct HangsOnTwo {
  explicit HangsOnTwo(std::shared_ptr<HangForeverState> s) : state(std::move(s)) {
    ++state->constructed;
  }
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    for (int v : x) {
      if (v == 2) {
        ++state->hung_attempts;
        ++state->hanging;
        state->release.wait(std::chrono::seconds(60));
        --state->hanging;
      }
      out.push_back(v * 2);
    }
    return out;
  }
  std::shared_ptr<HangForeverState> state;
};

// Opens the gate and waits until no abandoned attempt is still inside run().
bool release_hung_attempts(HangForeverState& state) {
  state.release.open();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (state.hanging.load() > 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return state.hanging.load() == 0;
}

}  // namespace

// A thread pool cannot kill the thread of a hung attempt, but past the replay budget it still
// isolates the Grain under isolate_tail(): the batch is split until the Grain that keeps timing
// out runs alone and is FAILED with the timeout as its cause; the rest of its batch completes
// and the run goes on. The outcome does not depend on how many actors share the work.
TEST(LocalExecutor, GrainThatAlwaysTimesOutIsFailedUnderIsolateTail) {
  for (int replicas : {1, 3}) {
    SCOPED_TRACE(replicas);
    auto state = std::make_shared<HangForeverState>();
    ro::Module<HangsOnTwo> udf = ro::Module<HangsOnTwo>(state)
                                     .replicas(replicas)
                                     .batch_size(4)
                                     .timeout(std::chrono::milliseconds(100))
                                     .infra_retries(1)
                                     .recovery(ro::RecoveryPolicy::isolate_tail());
    auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
    ro::Executor ex(program);
    auto r = ex.run({0, 1, 2, 3, 4, 5, 6, 7}, quiet());
    ASSERT_EQ(r.outputs.size(), 8u);
    for (int v = 0; v < 8; ++v) {
      const auto& out = r.outputs[static_cast<std::size_t>(v)];
      if (v == 2) continue;
      ASSERT_TRUE(out.ok()) << v << ": " << out.issue().cause;
      EXPECT_EQ(out.value(), v * 2);
    }
    ASSERT_FALSE(r.outputs[2].ok());
    EXPECT_EQ(r.outputs[2].issue().outcome, ro::Outcome::failed);
    EXPECT_NE(
        r.outputs[2].issue().cause.find("rayorch::Timeout: the RPC ran past the 100 ms timeout"),
        std::string::npos)
        << r.outputs[2].issue().cause;
    // The attempts at Grain 2: the first and its replay within infra_retries, the tail
    // retry, the half (2, 3), then Grain 2 alone.
    EXPECT_EQ(state->hung_attempts.load(), 5);
    EXPECT_GE(r.metrics.actors_replaced, 5u);
    EXPECT_FALSE(ex.closed());
    // The executor stays usable.
    auto again = ex.run({5}, quiet());
    EXPECT_EQ(values_of(again.outputs), (std::vector<int>{10}));
    // Every timed-out attempt abandoned its thread and a new instance took its place: the
    // pool kept its capacity. Closing joins every live actor after its constructor ran.
    ex.close();
    EXPECT_EQ(static_cast<std::uint64_t>(state->constructed.load()),
              static_cast<std::uint64_t>(replicas) + r.metrics.actors_replaced +
                  again.metrics.actors_replaced);
    EXPECT_TRUE(release_hung_attempts(*state));
  }
}

// The default policy still stops the run, now naming the policy that would contain the hang.
TEST(LocalExecutor, GrainThatAlwaysTimesOutAbortsUnderTheDefaultPolicy) {
  auto state = std::make_shared<HangForeverState>();
  ro::Module<HangsOnTwo> udf = ro::Module<HangsOnTwo>(state)
                                   .batch_size(4)
                                   .timeout(std::chrono::milliseconds(100))
                                   .infra_retries(1);
  auto program = ro::compile([&](ro::Port<int> x) { return udf(x); });
  ro::Executor ex(program);
  try {
    ex.run({0, 1, 2, 3}, quiet());
    ADD_FAILURE() << "the run did not abort";
  } catch (const ro::ExecutionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rayorch::Timeout: the RPC ran past the 100 ms timeout"), std::string::npos)
        << what;
    EXPECT_NE(what.find("isolate_tail()"), std::string::npos) << what;
  }
  EXPECT_EQ(state->hung_attempts.load(), 2);  // the first attempt and its one replay
  EXPECT_TRUE(release_hung_attempts(*state));
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
  EXPECT_NE(shown.find("in-flight"), std::string::npos) << shown;
  // The run with progress off printed nothing.
  EXPECT_EQ(shown.find("roots 1/1"), std::string::npos) << shown;
}
