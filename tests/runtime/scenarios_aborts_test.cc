// End-to-end scenarios of the semantic runtime (DESIGN 5) on reports and aborts: a stale
// report is rejected, an aligned-list length mismatch and a failing UDF abort with a readable
// error and keep the executor, and an incomplete batch with nothing to do is a deadlock.
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "support/runtime_harness.h"
#include "support/runtime_scenario_udfs.h"
#include "support/runtime_udfs.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

using namespace runtime_test;
namespace F = ro::F;
using rd::GrainPhase;

TEST(Scenario, AStaleGenerationReportIsRejected) {
  ro::Module<Q> q = ro::Module<Q>().recovery(ro::RecoveryPolicy::retry_batch(1));
  int out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto o = q(x);
    out = o.id();
    return o;
  });
  EngineRig rig(program, {5});
  const int call = rig.call("Q#0");
  auto first = rig.reserve(call);
  EXPECT_EQ(first.generations, std::vector<std::uint32_t>{0});
  EXPECT_FALSE(rig->fail(first.id, "std::runtime_error: flaky").abort);
  EXPECT_EQ(rig->grain_phase(call, 0), GrainPhase::ready);
  auto second = rig.reserve(call);
  EXPECT_EQ(second.generations, std::vector<std::uint32_t>{1});
  // The first attempt reports late: rejected, nothing published.
  EXPECT_EQ(rig.commit(first, std::vector<ro::Row<int>>{111}), rd::CommitStatus::stale);
  EXPECT_EQ(rig.item(out, 0), "unresolved");
  EXPECT_EQ(rig->grain_phase(call, 0), GrainPhase::in_flight);
  EXPECT_EQ(rig.commit(second, std::vector<ro::Row<int>>{222}), rd::CommitStatus::accepted);
  EXPECT_EQ(*static_cast<const int*>(rig.value(out, 0)), 222);
  // A duplicate of the accepted report is rejected too, and so are failures of old attempts.
  EXPECT_EQ(rig.commit(second, std::vector<ro::Row<int>>{333}), rd::CommitStatus::stale);
  EXPECT_FALSE(rig->fail(first.id, "late").abort);
  EXPECT_FALSE(rig->lost(second.id, "late").abort);
  EXPECT_EQ(*static_cast<const int*>(rig.value(out, 0)), 222);
  EXPECT_EQ(rig->stale_reports(), 4u);
  EXPECT_TRUE(rig->complete());
}

// Lists of equal length except on rows valued 2, where the second list is one longer.
struct Uneven {
  std::tuple<std::vector<std::vector<int>>, std::vector<std::vector<int>>> run(ro::Column<int> x) {
    std::tuple<std::vector<std::vector<int>>, std::vector<std::vector<int>>> out;
    for (int v : x) {
      std::get<0>(out).emplace_back(static_cast<std::size_t>(v), 1);
      std::get<1>(out).emplace_back(static_cast<std::size_t>(v == 2 ? 3 : v), 1);
    }
    return out;
  }
};

TEST(Scenario, AnAlignedExpandLengthMismatchAbortsWithAClearError) {
  ro::Module<Uneven> uneven;
  auto log = std::make_shared<CallLog>();
  ro::Module<Add> add = ro::Module<Add>(log).batch_size(8);
  ro::Module<SumGroup> total;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [la, lb] = uneven(x);
    auto [a, b] = F::expand_aligned(la, lb);
    return total(F::reduce(add(a, b)));
  });
  ro::testing::SyncExecutor ok_ex(program);
  EXPECT_EQ(ok_ex.run({1, 3}).outputs[1].value(), 6);
  ro::testing::SyncExecutor ex(program);
  try {
    ex.run({1, 2});
    FAIL() << "expected an ExecutionError";
  } catch (const ro::ExecutionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("F::expand_aligned"), std::string::npos) << what;
    EXPECT_NE(what.find("Uneven#0"), std::string::npos) << what;
    EXPECT_NE(what.find("entity 1"), std::string::npos) << what;
    EXPECT_NE(what.find("2 elements"), std::string::npos) << what;
    EXPECT_NE(what.find("has 3"), std::string::npos) << what;
  }
  EXPECT_FALSE(ex.closed());  // an aborted run keeps the executor
  // Nothing of the mismatched row was published: none of its children reached Add.
  log->seen.clear();
  ro::testing::SyncExecutor again(program);
  EXPECT_THROW(again.run({2, 1}), ro::ExecutionError);
  EXPECT_TRUE(log->seen.empty());
}

TEST(Scenario, AnAbortLeavesAReadableErrorNamingCallUdfGrainsAndGenerations) {
  ro::Module<Split> split;
  ro::Module<Boom> boom = ro::Module<Boom>(21);
  ro::Module<Boom> retried = ro::Module<Boom>(21).recovery(ro::RecoveryPolicy::retry_batch(1));
  struct Case {
    ro::Module<Boom>* module;
    std::string grains;
    std::string why;
  };
  for (const Case& c :
       {Case{&boom, "[0/1 g0]: ", ""}, Case{&retried, "[0/1 g1]", "after 1 retries"}}) {
    auto program =
        ro::compile([&](ro::Port<int> x) { return F::reduce((*c.module)(F::expand(split(x)))); });
    ro::testing::SyncExecutor ex(program);
    try {
      ex.run({2});
      FAIL() << "expected an ExecutionError";
    } catch (const ro::ExecutionError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("Call Boom#1"), std::string::npos) << what;
      EXPECT_NE(what.find("UDF Boom"), std::string::npos) << what;
      EXPECT_NE(what.find(c.grains), std::string::npos) << what;
      EXPECT_NE(what.find(c.why), std::string::npos) << what;
      EXPECT_NE(what.find("std::runtime_error: boom"), std::string::npos) << what;
    }
    EXPECT_FALSE(ex.closed());  // an aborted run keeps the executor
    EXPECT_THROW(ex.run({2}), ro::ExecutionError);
  }
}

TEST(Scenario, AnIncompleteBatchWithNothingToDoIsReportedAsADeadlock) {
  ro::Module<Q> q;
  auto program = ro::compile([&](ro::Port<int> x) { return q(x); });
  EngineRig rig(program, {1, 2});
  const int call = rig.call("Q#0");
  // Work that is ready or in flight is not a deadlock.
  EXPECT_FALSE(rig->stuck());
  auto first = rig.reserve(call);
  auto second = rig.reserve(call);
  EXPECT_FALSE(rig->stuck());
  rig.commit(first, std::vector<ro::Row<int>>{1});
  EXPECT_FALSE(rig->stuck());
  // The policy aborts; the attempt is gone and its Grain can never seal.
  const rd::FailureVerdict v = rig->fail(second.id, "std::runtime_error: boom");
  ASSERT_TRUE(v.abort);
  EXPECT_FALSE(rig->complete());
  EXPECT_TRUE(rig->stuck());
  const std::string report = rig->deadlock_report();
  EXPECT_NE(report.find("deadlock in input batch 0"), std::string::npos) << report;
  EXPECT_NE(report.find("1 of 2 Grains are sealed"), std::string::npos) << report;
  EXPECT_NE(report.find("1 of 2 roots are terminal"), std::string::npos) << report;
  EXPECT_NE(report.find("Q#0: 1 sealed, 0 waiting, 0 ready, 1 in flight"), std::string::npos)
      << report;
}

}  // namespace
