// Recovery from lost actors and timeouts (DESIGN 5 and 6.3), asserted RPC by RPC: a lost
// actor is replaced and its Grains replay within the infrastructure budget, a
// process-isolated pool splits a batch that keeps losing its worker, a timeout past the
// budget goes to the recovery policy, and a lost batch replays only its live Grains.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/flaky_udf.h"
#include "support/runtime_harness.h"
#include "support/runtime_udfs.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

using namespace runtime_test;
using namespace runtime_test::flaky_udf;
namespace F = ro::F;

// ---- Lost actors ------------------------------------------------------------------------

TEST(Recovery, ALostActorIsReplacedAndItsGrainsReplayAtTheNextGeneration) {
  auto script = std::make_shared<Script>();
  script->losses[1] = 1;
  const RunLog o = run_flaky(ro::RecoveryPolicy::abort(), script);
  // The replay goes ahead of ready work and does not consume the (abort) policy.
  EXPECT_EQ(o.rpcs, (std::vector<std::string>{"Flaky#0 [0 1 2 3] g0 failed", "Flaky#0 [0 1 2 3] g1",
                                              "Flaky#0 [4] g0"}));
  EXPECT_EQ(o.outputs, kAllPresent);
  EXPECT_EQ(o.metrics.actors_replaced, 1u);
  EXPECT_EQ(script->constructed, 2);
}

TEST(Recovery, LostActorsReplayWithinTheInfrastructureBudgetAndAbortBeyondIt) {
  struct Case {
    int infra_retries;
    int losses;
    bool aborts;
  };
  for (const Case& c : {Case{0, 1, true}, Case{1, 2, true}, Case{2, 2, false}, Case{3, 2, false}}) {
    SCOPED_TRACE("infra_retries " + std::to_string(c.infra_retries) + ", losses " +
                 std::to_string(c.losses));
    auto script = std::make_shared<Script>();
    script->losses[3] = c.losses;
    const RunLog o = run_flaky(ro::RecoveryPolicy::retry_batch(5), script, c.infra_retries);
    std::vector<std::string> expected;
    const int attempts = std::min(c.losses, c.infra_retries) + 1;
    for (int g = 0; g < attempts; ++g) {
      const bool lost = g < c.losses;
      expected.push_back("Flaky#0 [0 1 2 3] g" + std::to_string(g) + (lost ? " failed" : ""));
    }
    if (!c.aborts) expected.push_back("Flaky#0 [4] g0");
    EXPECT_EQ(o.rpcs, expected);
    if (c.aborts) {
      const std::string gen = "g" + std::to_string(c.infra_retries);
      EXPECT_NE(o.error.find("Call Flaky#0 (UDF Flaky) lost its actor on Grains [0 " + gen),
                std::string::npos)
          << o.error;
      EXPECT_NE(o.error.find("ActorLost: actor vanished"), std::string::npos) << o.error;
    } else {
      EXPECT_EQ(o.error, "");
      EXPECT_EQ(o.outputs, kAllPresent);
    }
  }
}

// A process-isolated pool contains a loss to one worker: beyond the infrastructure budget
// the batch is split in halves (deferred) until the Grain that keeps killing workers is
// FAILED alone with the loss as its cause, and the run goes on (DESIGN 6.3). The engine
// decides it from the pool's options, so the SyncExecutor (in-process) shows the sequence.
TEST(Recovery, IsolatedPoolSplitsABatchThatKeepsLosingItsWorker) {
  auto script = std::make_shared<Script>();
  script->losses[2] = INT_MAX;
  ro::Module<Flaky> flaky =
      ro::Module<Flaky>(script).batch_size(4).infra_retries(1).isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<int> x) { return flaky(x); });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({0, 1, 2, 3, 4});
  std::vector<std::string> rpcs;
  for (const auto& rpc : ex.rpcs()) rpcs.push_back(rpc.to_string());
  EXPECT_EQ(rpcs, (std::vector<std::string>{"Flaky#0 [0 1 2 3] g0 failed",
                                            "Flaky#0 [0 1 2 3] g1 failed", "Flaky#0 [4] g0",
                                            "Flaky#0 [0 1] g2", "Flaky#0 [2 3] g2 failed",
                                            "Flaky#0 [2] g3 failed", "Flaky#0 [3] g3"}));
  ASSERT_EQ(r.outputs.size(), 5u);
  for (int i : {0, 1, 3, 4}) EXPECT_EQ(r.outputs[i].value(), 100 + i);
  ASSERT_FALSE(r.outputs[2].ok());
  EXPECT_EQ(r.outputs[2].issue().outcome, ro::Outcome::failed);
  EXPECT_EQ(r.outputs[2].issue().cause, "rayorch::ActorLost: actor vanished");
  EXPECT_EQ(r.metrics.actors_replaced, 4u);
}

TEST(Recovery, IsolatedPoolWithoutInfraBudgetSplitsAtTheFirstLoss) {
  auto script = std::make_shared<Script>();
  script->losses[1] = INT_MAX;
  ro::Module<Flaky> flaky =
      ro::Module<Flaky>(script).batch_size(2).infra_retries(0).isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<int> x) { return flaky(x); });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({0, 1, 2});
  std::vector<std::string> rpcs;
  for (const auto& rpc : ex.rpcs()) rpcs.push_back(rpc.to_string());
  EXPECT_EQ(rpcs, (std::vector<std::string>{"Flaky#0 [0 1] g0 failed", "Flaky#0 [2] g0",
                                            "Flaky#0 [0] g1", "Flaky#0 [1] g1 failed"}));
  EXPECT_EQ(r.outputs[0].value(), 100);
  EXPECT_EQ(r.outputs[2].value(), 102);
  EXPECT_EQ(r.outputs[1].issue().outcome, ro::Outcome::failed);
}

// A timeout past the infrastructure budget in a thread pool is a UDF failure under the
// Call's RecoveryPolicy: isolate_tail() takes its tail retry, then splits the batch until the
// Grain that keeps timing out is FAILED alone with the timeout as its cause (DESIGN 5.10).
TEST(Recovery, ATimeoutPastTheBudgetIsIsolatedByIsolateTail) {
  ro::Module<Q> q =
      ro::Module<Q>().batch_size(4).infra_retries(1).recovery(ro::RecoveryPolicy::isolate_tail());
  int out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto y = q(x);
    out = y.id();
    return y;
  });
  EngineRig rig(program, {0, 1, 2, 3, 4});
  using Rows = std::vector<ro::Row<int>>;
  const std::string timeout = "rayorch::Timeout: the RPC ran past the 100 ms timeout";
  const int call = rig.call("Q#0");
  auto time_out = [&](const rd::Invocation& b) {
    EXPECT_FALSE(rig->lost(b.id, timeout, rd::Loss::timeout).abort);
    rig.advance();
  };
  auto first = rig.reserve(call);
  ASSERT_EQ(rig.keys(first), "0 1 2 3");
  time_out(first);  // within infra_retries: replayed at once
  auto replay = rig.reserve(call);
  ASSERT_EQ(rig.keys(replay), "0 1 2 3");
  time_out(replay);  // past the budget: the tail retry, behind the ready work
  auto ready = rig.reserve(call);
  ASSERT_EQ(rig.keys(ready), "4");
  rig.commit(ready, Rows{4});
  auto tail = rig.reserve(call);
  ASSERT_EQ(rig.keys(tail), "0 1 2 3");
  time_out(tail);
  auto low = rig.reserve(call);
  auto high = rig.reserve(call);
  ASSERT_EQ(rig.keys(low), "0 1");
  ASSERT_EQ(rig.keys(high), "2 3");
  rig.commit(low, Rows{0, 1});
  time_out(high);
  auto alone = rig.reserve(call);
  auto three = rig.reserve(call);
  ASSERT_EQ(rig.keys(alone), "2");
  ASSERT_EQ(rig.keys(three), "3");
  time_out(alone);
  rig.commit(three, Rows{3});
  EXPECT_EQ(rig.item(out, 2), "failed(" + timeout + ")");
  for (std::uint32_t e : {0u, 1u, 3u, 4u}) EXPECT_EQ(rig.item(out, e), "present");
  EXPECT_TRUE(rig->complete());
}

// Past the budget, the default policy stops the run on a timeout as on a UDF exception.
TEST(Recovery, ATimeoutPastTheBudgetAbortsUnderTheDefaultPolicy) {
  ro::Module<Q> q = ro::Module<Q>().batch_size(2).infra_retries(0);
  auto program = ro::compile([&](ro::Port<int> x) { return q(x); });
  EngineRig rig(program, {0, 1});
  auto b = rig.reserve(rig.call("Q#0"));
  const rd::FailureVerdict v =
      rig->lost(b.id, "rayorch::Timeout: the RPC ran past the 5 ms timeout", rd::Loss::timeout);
  EXPECT_TRUE(v.abort);
  EXPECT_NE(v.message.find("failed on Grains [0 g0, 1 g0]: rayorch::Timeout: the RPC ran past "
                           "the 5 ms timeout; the Module's recovery policy abort()"),
            std::string::npos)
      << v.message;
}

// A lost actor with barriered Grains: they are sealed, only the live ones replay.
TEST(Recovery, ALostBatchReplaysOnlyItsLiveGrains) {
  ro::Module<S> s;
  ro::Module<Q> g = ro::Module<Q>().batch_size(2);
  int g_out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto go = g(F::expand(s(x)));
    g_out = go.id();
    return F::reduce(go);
  });
  EngineRig rig(program, {3, 2});
  using Lists = std::vector<ro::Row<std::vector<int>>>;
  using Rows = std::vector<ro::Row<int>>;
  rig.commit(rig.reserve(rig.call("S#0")), Lists{std::vector<int>{0, 0, 0}});
  rig.commit(rig.reserve(rig.call("S#0")), Lists{std::vector<int>{0, 0}});
  const int g_call = rig.call("Q#1");
  auto a = rig.reserve(g_call);
  auto b = rig.reserve(g_call);
  auto c = rig.reserve(g_call);
  ASSERT_EQ(rig.keys(a), "0/0 0/1");
  ASSERT_EQ(rig.keys(b), "0/2 1/0");
  ASSERT_EQ(rig.keys(c), "1/1");
  rig.commit(a, Rows{ro::GroupFailure{"encrypted"}, 5});
  EXPECT_FALSE(rig->lost(b.id, "rayorch::ActorLost: gone").abort);
  rig.advance();
  EXPECT_EQ(rig.item(g_out, 2), "suppressed(encrypted)");
  auto replay = rig.reserve(g_call);
  EXPECT_EQ(rig.keys(replay), "1/0");
  EXPECT_EQ(replay.generations, (std::vector<std::uint32_t>{1}));
  rig.commit(replay, Rows{6});
  rig.commit(c, Rows{7});
  EXPECT_EQ(rig.item(g_out, 0), "failed(encrypted)");
  EXPECT_EQ(rig.item(g_out, 1), "suppressed(encrypted)");
  EXPECT_EQ(rig.item(g_out, 3), "present");
  EXPECT_EQ(rig.item(g_out, 4), "present");
  EXPECT_EQ(rig->grain_generation(g_call, 4), 0u);
  EXPECT_TRUE(rig->complete());
}

}  // namespace
