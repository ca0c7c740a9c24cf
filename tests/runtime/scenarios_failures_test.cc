// End-to-end scenarios of the semantic runtime (DESIGN 5) on dropped and failed Items: the
// call input rule end to end through testing::SyncExecutor, and typed failures (a
// RecordFailure suppresses only its parent's reduce, a GroupFailure stops its siblings),
// including the cases with several RPCs in flight at once, driven on the Engine directly.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "support/runtime_harness.h"
#include "support/runtime_scenario_checks.h"
#include "support/runtime_scenario_udfs.h"
#include "support/runtime_udfs.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

using namespace runtime_test;
using namespace runtime_test::scenario_checks;
namespace F = ro::F;
using rd::GrainPhase;

// ---- Call input rule end to end --------------------------------------------------------

TEST(Scenario, ADroppedInputMeansTheUdfIsNeverCalled) {
  auto log = std::make_shared<CallLog>();
  ro::Module<Ident> a;
  ro::Module<Ident> b;
  ro::Module<IsEven> even;
  ro::Module<Add> add = ro::Module<Add>(log).batch_size(4);
  auto program = ro::compile([&](ro::Port<int> x) {
    auto kept = F::filter(b(x), even(x));
    return add(a(x), kept);
  });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({0, 1, 2, 3, 4, 5, 6});
  EXPECT_EQ(log->seen, (std::vector<int>{0, 2, 4, 6}));
  for (int row = 0; row < 7; ++row) {
    if (row % 2 == 0) {
      ASSERT_TRUE(r.outputs[row].ok());
      EXPECT_EQ(r.outputs[row].value(), 2 * row);
    } else {
      EXPECT_EQ(r.outputs[row].issue(), (ro::OutputIssue{ro::Outcome::dropped, ""}));
    }
  }
  for (const auto& rpc : ex.rpcs()) {
    if (rpc.call.rfind("Add#", 0) != 0) continue;
    for (const auto& g : rpc.grains) EXPECT_EQ(std::stoi(g) % 2, 0) << rpc.to_string();
  }
}

TEST(Scenario, AFailureDominatesADropWhateverTheArrivalOrder) {
  // The drop comes from Ident + Never, the failure from AlwaysFail. Which pool is traced
  // first decides which input arrives first; the argument order is varied as well.
  for (bool failure_first : {true, false}) {
    for (bool failure_is_first_argument : {true, false}) {
      SCOPED_TRACE(
          std::string(failure_first ? "failure arrives first" : "drop arrives first") +
          (failure_is_first_argument ? ", failure is argument 0" : ", drop is argument 0"));
      auto log = std::make_shared<CallLog>();
      ro::Module<AlwaysFail> fail;
      ro::Module<Ident> ident;
      ro::Module<Never> never;
      ro::Module<Add> add = ro::Module<Add>(log);
      auto program = ro::compile([&](ro::Port<int> x) {
        std::optional<ro::Port<int>> failed, dropped;
        if (failure_first) failed = fail(x);
        dropped = F::filter(ident(x), never(x));
        if (!failure_first) failed = fail(x);
        return failure_is_first_argument ? add(*failed, *dropped) : add(*dropped, *failed);
      });
      ro::testing::SyncExecutor ex(program);
      auto r = ex.run({3});
      EXPECT_EQ(r.outputs[0].issue(), (ro::OutputIssue{ro::Outcome::suppressed, "broke on 3"}));
      EXPECT_TRUE(log->seen.empty());
      const auto rpcs = log_of(ex.rpcs());
      const long fail_at = position(rpcs, "AlwaysFail#");
      const long drop_at = std::max(position(rpcs, "Ident#"), position(rpcs, "Never#"));
      ASSERT_GE(fail_at, 0);
      ASSERT_GE(drop_at, 0);
      EXPECT_EQ(fail_at < drop_at, failure_first);
      EXPECT_EQ(position(rpcs, "Add#"), -1);
    }
  }
}

// ---- Typed failures --------------------------------------------------------------------

TEST(Scenario, ARecordFailureSuppressesOnlyItsParentsReduce) {
  auto log = std::make_shared<CallLog>();
  ro::Module<Split> split;
  ro::Module<Page> page = ro::Module<Page>(log, 31, -1).batch_size(2);
  ro::Module<SumGroup> sum;
  auto program =
      ro::compile([&](ro::Port<int> x) { return sum(F::reduce(page(F::expand(split(x))))); });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({3, 2, 1});
  EXPECT_EQ(r.outputs[0].issue(), (ro::OutputIssue{ro::Outcome::suppressed, "page 31 unreadable"}));
  EXPECT_EQ(r.outputs[1].value(), 20 + 21);
  EXPECT_EQ(r.outputs[2].value(), 10);
  // A RecordFailure stops nothing else: every sibling still ran.
  std::vector<int> seen = log->seen;
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{10, 20, 21, 30, 31, 32}));
  // The suppressed parent's downstream Call never ran.
  for (const auto& rpc : ex.rpcs()) {
    if (rpc.call.rfind("SumGroup#", 0) == 0) {
      EXPECT_EQ(std::find(rpc.grains.begin(), rpc.grains.end(), "0"), rpc.grains.end());
    }
  }
}

TEST(Scenario, AGroupFailureStopsUndispatchedSiblingsOnlyOfItsParentAndCall) {
  auto page_log = std::make_shared<CallLog>();
  auto after_log = std::make_shared<CallLog>();
  auto other_log = std::make_shared<CallLog>();
  ro::Module<Split> split;
  ro::Module<Page> page = ro::Module<Page>(page_log, -1, 41);
  ro::Module<Ident> after = ro::Module<Ident>(after_log);
  ro::Module<Ident> other = ro::Module<Ident>(other_log);
  auto program = ro::compile([&](ro::Port<int> x) {
    auto pages = F::expand(split(x));
    auto kept = F::reduce(after(page(pages)));
    auto all = F::reduce(other(pages));
    return std::make_tuple(kept, all);
  });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({4, 2});
  auto& [kept, all] = r.outputs;
  // 40 committed before the GroupFailure at 41; 42 and 43 were never dispatched.
  EXPECT_EQ(page_log->seen, (std::vector<int>{40, 41, 20, 21}));
  std::vector<int> after_seen = after_log->seen;
  std::sort(after_seen.begin(), after_seen.end());
  EXPECT_EQ(after_seen, (std::vector<int>{20, 21, 40}));  // committed siblings stay
  EXPECT_EQ(kept[0].issue(), (ro::OutputIssue{ro::Outcome::suppressed, "document is encrypted"}));
  EXPECT_EQ(plain(kept[1].value()), (std::vector<int>{20, 21}));
  // Another Call on the same pages is untouched.
  EXPECT_EQ(plain(all[0].value()), (std::vector<int>{40, 41, 42, 43}));
  EXPECT_EQ(plain(all[1].value()), (std::vector<int>{20, 21}));
  const auto& page_metrics = r.metrics.calls.at(1);
  EXPECT_EQ(page_metrics.call, "Page#1");
  EXPECT_EQ(page_metrics.suppressed_by_barrier, 2u);
}

// GroupFailure against committed, in-flight, READY and other-parent siblings, with several
// RPCs in flight at once (which only the Engine API can arrange deterministically).
TEST(Scenario, AGroupFailureRejectsInFlightSiblingsAndSealsReadyOnes) {
  ro::Module<S> s;
  ro::Module<Q> g = ro::Module<Q>().batch_size(2);
  ro::Module<Q> other;
  int g_out = -1, kept = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto ch = F::expand(s(x));
    auto go = g(ch);
    auto oo = other(ch);
    g_out = go.id();
    auto r = F::reduce(go);
    kept = r.id();
    return std::make_tuple(r, F::reduce(oo));
  });
  EngineRig rig(program, {8, 2});
  const int s_call = rig.call("S#0"), g_call = rig.call("Q#1"), o_call = rig.call("Q#2");
  using Lists = std::vector<ro::Row<std::vector<int>>>;
  using Rows = std::vector<ro::Row<int>>;
  rig.commit(rig.reserve(s_call), Lists{std::vector<int>(8, 0)});
  rig.commit(rig.reserve(s_call), Lists{std::vector<int>(2, 0)});
  auto a = rig.reserve(g_call);
  ASSERT_EQ(rig.keys(a), "0/0 0/1");
  ASSERT_EQ(rig.commit(a, Rows{1, 2}), rd::CommitStatus::accepted);
  auto b = rig.reserve(g_call);
  auto c = rig.reserve(g_call);
  ASSERT_EQ(rig.keys(b), "0/2 0/3");
  ASSERT_EQ(rig.keys(c), "0/4 0/5");
  ASSERT_EQ(rig.commit(c, Rows{ro::GroupFailure{"encrypted"}, 6}), rd::CommitStatus::accepted);
  // READY siblings (0/6, 0/7) are sealed when a reservation reaches them.
  auto d = rig.reserve(g_call);
  EXPECT_EQ(rig.keys(d), "1/0 1/1");
  EXPECT_FALSE(rig->reserve(g_call).has_value());
  // The in-flight batch finishes, but its successes are rejected.
  EXPECT_EQ(rig.commit(b, Rows{3, 4}), rd::CommitStatus::accepted);
  EXPECT_EQ(rig.commit(d, Rows{9, 10}), rd::CommitStatus::accepted);
  const std::vector<std::string> expected = {"present",
                                             "present",
                                             "suppressed(encrypted)",
                                             "suppressed(encrypted)",
                                             "failed(encrypted)",
                                             "suppressed(encrypted)",
                                             "suppressed(encrypted)",
                                             "suppressed(encrypted)",
                                             "present",
                                             "present"};
  for (std::uint32_t e = 0; e < 10; ++e) {
    EXPECT_EQ(rig.item(g_out, e), expected[e]) << rig->entity_key(1, e);
    // The other Call on the same children is untouched.
    EXPECT_EQ(rig->grain_phase(o_call, e), GrainPhase::ready);
  }
  EXPECT_EQ(rig->counters(g_call).suppressed_by_barrier, 5u);
  EXPECT_EQ(rig.item(kept, 0), "suppressed(encrypted)");
  EXPECT_EQ(rig.item(kept, 1), "present");
  EXPECT_EQ(plain(*static_cast<const ro::Group<int>*>(rig.value(kept, 1))),
            (std::vector<int>{9, 10}));
  for (int i = 0; i < 10; ++i) rig.commit(rig.reserve(o_call), Rows{i});
  EXPECT_TRUE(rig->complete());
}

TEST(Scenario, AGroupFailureSealsWaitingSiblingsWhenTheirInputsResolve) {
  ro::Module<S> s;
  ro::Module<Q> u;
  ro::Module<Q> g;
  int g_out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto go = g(u(F::expand(s(x))));
    g_out = go.id();
    return F::reduce(go);
  });
  EngineRig rig(program, {3});
  const int u_call = rig.call("Q#1"), g_call = rig.call("Q#2");
  using Rows = std::vector<ro::Row<int>>;
  rig.commit(rig.reserve(rig.call("S#0")),
             std::vector<ro::Row<std::vector<int>>>{std::vector<int>{0, 0, 0}});
  rig.commit(rig.reserve(u_call), Rows{1});
  rig.commit(rig.reserve(g_call), Rows{ro::GroupFailure{"bad document"}});
  EXPECT_EQ(rig->grain_phase(g_call, 1), GrainPhase::waiting);
  // The upstream Call is another Call: it keeps running its siblings.
  rig.commit(rig.reserve(u_call), Rows{2});
  EXPECT_EQ(rig->grain_phase(g_call, 1), GrainPhase::sealed);
  EXPECT_EQ(rig.item(g_out, 1), "suppressed(bad document)");
  EXPECT_FALSE(rig->has_work(g_call));
  rig.commit(rig.reserve(u_call), Rows{3});
  EXPECT_EQ(rig.item(g_out, 2), "suppressed(bad document)");
  EXPECT_EQ(rig->counters(g_call).suppressed_by_barrier, 2u);
  EXPECT_TRUE(rig->complete());
}

}  // namespace
