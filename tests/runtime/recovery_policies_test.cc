// Recovery from UDF failures (DESIGN 5), asserted RPC by RPC: the dispatch sequences of
// retry_batch, retry_tail and isolate_tail, the abort when a budget is exhausted or under
// the default policy, and barriered Grains of a failed batch, which are sealed before the
// policy is consulted.
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

// ---- The DESIGN 5 sequences -------------------------------------------------------------

TEST(Recovery, RetryBatchRequeuesTheExactBatchAheadOfReadyWork) {
  auto script = std::make_shared<Script>();
  script->throws[0] = 1;
  const RunLog o = run_flaky(ro::RecoveryPolicy::retry_batch(1), script);
  EXPECT_EQ(o.rpcs, (std::vector<std::string>{"Flaky#0 [0 1 2 3] g0 failed", "Flaky#0 [0 1 2 3] g1",
                                              "Flaky#0 [4] g0"}));
  EXPECT_EQ(o.outputs, kAllPresent);
  EXPECT_EQ(o.metrics.calls.at(0).requeues, 4u);
  EXPECT_EQ(o.metrics.calls.at(0).failed_rpcs, 1u);
}

TEST(Recovery, RetryTailRequeuesTheExactBatchBehindReadyWork) {
  auto script = std::make_shared<Script>();
  script->throws[0] = 1;
  const RunLog o = run_flaky(ro::RecoveryPolicy::retry_tail(1), script);
  EXPECT_EQ(o.rpcs, (std::vector<std::string>{"Flaky#0 [0 1 2 3] g0 failed", "Flaky#0 [4] g0",
                                              "Flaky#0 [0 1 2 3] g1"}));
  EXPECT_EQ(o.outputs, kAllPresent);
}

TEST(Recovery, IsolateTailSplitsUntilThePoisonedGrainIsFailed) {
  auto script = std::make_shared<Script>();
  script->throws[2] = INT_MAX;
  const RunLog o = run_flaky(ro::RecoveryPolicy::isolate_tail(), script);
  EXPECT_EQ(o.rpcs, (std::vector<std::string>{"Flaky#0 [0 1 2 3] g0 failed", "Flaky#0 [4] g0",
                                              "Flaky#0 [0 1 2 3] g1 failed", "Flaky#0 [0 1] g2",
                                              "Flaky#0 [2 3] g2 failed", "Flaky#0 [2] g3 failed",
                                              "Flaky#0 [3] g3"}));
  EXPECT_EQ(o.outputs, (std::vector<std::string>{"100", "101", "failed(std::runtime_error: boom)",
                                                 "103", "104"}));
}

TEST(Recovery, IsolateTailRecoversATransientFailureWithItsSingleTailRetry) {
  auto script = std::make_shared<Script>();
  script->throws[2] = 1;
  const RunLog o = run_flaky(ro::RecoveryPolicy::isolate_tail(), script);
  EXPECT_EQ(o.rpcs, (std::vector<std::string>{"Flaky#0 [0 1 2 3] g0 failed", "Flaky#0 [4] g0",
                                              "Flaky#0 [0 1 2 3] g1"}));
  EXPECT_EQ(o.outputs, kAllPresent);
}

TEST(Recovery, IsolateTailIsolatesSeveralPoisonedGrainsWithoutResettingBudgets) {
  auto script = std::make_shared<Script>();
  script->throws[0] = INT_MAX;
  script->throws[3] = INT_MAX;
  const RunLog o = run_flaky(ro::RecoveryPolicy::isolate_tail(), script);
  EXPECT_EQ(o.rpcs,
            (std::vector<std::string>{
                "Flaky#0 [0 1 2 3] g0 failed", "Flaky#0 [4] g0", "Flaky#0 [0 1 2 3] g1 failed",
                "Flaky#0 [0 1] g2 failed", "Flaky#0 [2 3] g2 failed", "Flaky#0 [0] g3 failed",
                "Flaky#0 [1] g3", "Flaky#0 [2] g3", "Flaky#0 [3] g3 failed"}));
  EXPECT_EQ(o.outputs, (std::vector<std::string>{"failed(std::runtime_error: boom)", "101", "102",
                                                 "failed(std::runtime_error: boom)", "104"}));
}

// ---- Exhausted budgets ------------------------------------------------------------------

TEST(Recovery, ExhaustedRetriesAbortNamingTheAttempt) {
  for (auto policy : {ro::RecoveryPolicy::retry_batch(1), ro::RecoveryPolicy::retry_tail(2)}) {
    auto script = std::make_shared<Script>();
    script->throws[1] = INT_MAX;
    const RunLog o = run_flaky(policy, script);
    const bool tail = policy.kind() == ro::RecoveryPolicy::Kind::retry_tail;
    SCOPED_TRACE(tail ? "retry_tail(2)" : "retry_batch(1)");
    const std::vector<std::string> expected =
        tail
            ? std::vector<std::string>{"Flaky#0 [0 1 2 3] g0 failed", "Flaky#0 [4] g0",
                                       "Flaky#0 [0 1 2 3] g1 failed", "Flaky#0 [0 1 2 3] g2 failed"}
            : std::vector<std::string>{"Flaky#0 [0 1 2 3] g0 failed",
                                       "Flaky#0 [0 1 2 3] g1 failed"};
    EXPECT_EQ(o.rpcs, expected);
    const std::string gen = tail ? "g2" : "g1";
    EXPECT_NE(o.error.find("Call Flaky#0 (UDF Flaky) failed on Grains [0 " + gen + ", 1 " + gen +
                           ", 2 " + gen + ", 3 " + gen + "] after " + (tail ? "2" : "1") +
                           " retries: std::runtime_error: boom"),
              std::string::npos)
        << o.error;
  }
}

TEST(Recovery, TheDefaultPolicyAbortsOnTheFirstFailure) {
  auto script = std::make_shared<Script>();
  script->throws[4] = 1;
  const RunLog o = run_flaky(ro::RecoveryPolicy::abort(), script);
  EXPECT_EQ(o.rpcs, (std::vector<std::string>{"Flaky#0 [0 1 2 3] g0", "Flaky#0 [4] g0 failed"}));
  EXPECT_NE(o.error.find("Call Flaky#0 (UDF Flaky) failed on Grains [4 g0]: "
                         "std::runtime_error: boom"),
            std::string::npos)
      << o.error;
}

// ---- Barriers meet failed batches -------------------------------------------------------

TEST(Recovery, BarrieredGrainsOfAFailedBatchAreSealedBeforeThePolicyIsConsulted) {
  for (auto policy : {ro::RecoveryPolicy::abort(), ro::RecoveryPolicy::retry_batch(1)}) {
    const bool retry = policy.kind() == ro::RecoveryPolicy::Kind::retry_batch;
    SCOPED_TRACE(retry ? "retry_batch(1)" : "abort");
    ro::Module<S> s;
    ro::Module<Q> g = ro::Module<Q>().batch_size(2).recovery(policy);
    int g_out = -1;
    auto program = ro::compile([&](ro::Port<int> x) {
      auto go = g(F::expand(s(x)));
      g_out = go.id();
      return F::reduce(go);
    });
    EngineRig rig(program, {4, 2});
    const int s_call = rig.call("S#0"), g_call = rig.call("Q#1");
    using Lists = std::vector<ro::Row<std::vector<int>>>;
    using Rows = std::vector<ro::Row<int>>;
    rig.commit(rig.reserve(s_call), Lists{std::vector<int>{0, 0, 0}});
    rig.commit(rig.reserve(s_call), Lists{std::vector<int>{0, 0}});
    auto a = rig.reserve(g_call);
    auto b = rig.reserve(g_call);
    auto c = rig.reserve(g_call);
    ASSERT_EQ(rig.keys(a), "0/0 0/1");
    ASSERT_EQ(rig.keys(b), "0/2 1/0");
    ASSERT_EQ(rig.keys(c), "1/1");
    rig.commit(a, Rows{ro::GroupFailure{"encrypted"}, 1});
    // A batch holding only barriered Grains fails: they are sealed, and there is nothing
    // left for the policy to decide, so even abort() lets the run continue.
    const rd::FailureVerdict vb = rig->fail(b.id, "std::runtime_error: boom");
    rig.advance();
    EXPECT_EQ(rig.item(g_out, 2), "suppressed(encrypted)");
    if (!retry) {
      // 1/0 is another parent: the abort names it alone.
      ASSERT_TRUE(vb.abort);
      EXPECT_NE(vb.message.find("failed on Grains [1/0 g0]: std::runtime_error: boom"),
                std::string::npos)
          << vb.message;
      EXPECT_EQ(vb.message.find("0/2"), std::string::npos) << vb.message;
      continue;
    }
    ASSERT_FALSE(vb.abort);
    // Only the live Grain is retried, at the next generation.
    auto retried = rig.reserve(g_call);
    EXPECT_EQ(rig.keys(retried), "1/0");
    EXPECT_EQ(retried.generations, std::vector<std::uint32_t>{1});
    EXPECT_EQ(rig->counters(g_call).requeues, 1u);
    rig.commit(retried, Rows{7});
    rig.commit(c, Rows{8});
    EXPECT_EQ(rig.item(g_out, 0), "failed(encrypted)");
    EXPECT_EQ(rig.item(g_out, 1), "suppressed(encrypted)");
    EXPECT_EQ(rig.item(g_out, 3), "present");
    EXPECT_EQ(rig.item(g_out, 4), "present");
    EXPECT_TRUE(rig->complete());
  }
}

TEST(Recovery, AFailedBatchOfOnlyBarrieredGrainsNeverReachesThePolicy) {
  ro::Module<S> s;
  ro::Module<Q> g = ro::Module<Q>().batch_size(2);  // abort()
  int g_out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto go = g(F::expand(s(x)));
    g_out = go.id();
    return F::reduce(go);
  });
  EngineRig rig(program, {4});
  using Rows = std::vector<ro::Row<int>>;
  rig.commit(rig.reserve(rig.call("S#0")),
             std::vector<ro::Row<std::vector<int>>>{std::vector<int>{0, 0, 0, 0}});
  const int g_call = rig.call("Q#1");
  auto a = rig.reserve(g_call);
  auto b = rig.reserve(g_call);
  rig.commit(a, Rows{1, ro::GroupFailure{"encrypted"}});
  const rd::FailureVerdict v = rig->fail(b.id, "std::runtime_error: boom");
  rig.advance();
  EXPECT_FALSE(v.abort) << v.message;
  for (std::uint32_t e : {0u, 2u, 3u}) EXPECT_EQ(rig.item(g_out, e), "suppressed(encrypted)");
  EXPECT_EQ(rig.item(g_out, 1), "failed(encrypted)");
  EXPECT_EQ(rig->counters(g_call).requeues, 0u);
  EXPECT_TRUE(rig->complete());
}

}  // namespace
