// Integration tests of the embedded local executor (DESIGN 3.4 and 6) through ro::Executor:
// failures. A contract error is never retried, an abort names the Grains and keeps the
// executor, a lost actor is replaced and its Grains replayed, and every recovery policy gives
// the SyncExecutor's outputs.
#include <chrono>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "support/executor_testing.h"
#include "support/local_executor_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace ro = rayorch;
using executor_testing::Gate;
using local_executor_testing::quiet;
using local_executor_testing::Stats;
using local_executor_testing::StatsPtr;
using local_executor_testing::values_of;

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
