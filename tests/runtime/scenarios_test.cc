// End-to-end scenarios of the semantic runtime (DESIGN 5) through testing::SyncExecutor, plus
// the few that need several RPCs in flight at once, driven on the Engine directly.
#include <pthread.h>

#include <algorithm>
#include <map>
#include <optional>
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

std::vector<std::string> log_of(const std::vector<ro::RpcRecord>& rpcs) {
  std::vector<std::string> out;
  for (const auto& r : rpcs) out.push_back(r.to_string());
  return out;
}

// Position of the first RPC whose text starts with `prefix`, or -1.
long position(const std::vector<std::string>& log, const std::string& prefix) {
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i].rfind(prefix, 0) == 0) return static_cast<long>(i);
  }
  return -1;
}

template <class T>
std::string issue_of(const ro::Output<T>& o) {
  if (o.ok()) return "present";
  return std::string(ro::to_string(o.issue().outcome)) +
         (o.issue().cause.empty() ? "" : "(" + o.issue().cause + ")");
}

// ---- Group shape -----------------------------------------------------------------------

TEST(Scenario, NestedExpandReduceKeepsEmptyGroupsExactly) {
  const std::vector<Nested> rows = {{{}, {0, 1}}, {}, {{5}, {}, {6, 7, 8}}};
  const std::vector<std::vector<std::vector<int>>> expected = {
      {{}, {10, 11}}, {}, {{15}, {}, {16, 17, 18}}};
  for (int batch : {1, 4}) {
    for (std::size_t input_batch : {0, 1}) {
      SCOPED_TRACE("batch " + std::to_string(batch) + " input batch " +
                   std::to_string(input_batch));
      ro::Module<InnerLists> outer;
      ro::Module<ListOf> inner = ro::Module<ListOf>().batch_size(batch);
      ro::Module<AddTen> add = ro::Module<AddTen>().batch_size(batch);
      auto program = ro::compile([&](ro::Port<Nested> x) {
        auto lists = F::expand(outer(x));
        auto values = F::expand(inner(lists));
        return F::reduce(F::reduce(add(values)));
      });
      ro::testing::SyncExecutor ex(program);
      auto r = ex.run(rows, {.input_batch_size = input_batch});
      ASSERT_EQ(r.outputs.size(), 3u);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        ASSERT_TRUE(r.outputs[i].ok()) << issue_of(r.outputs[i]);
        EXPECT_EQ(plain(r.outputs[i].value()), expected[i]) << "row " << i;
      }
    }
  }
}

TEST(Scenario, FilterInsideANestedGroupKeepsTheGroupShape) {
  const std::vector<Nested> rows = {{{1, 2, 3}, {2, 4}, {5}}, {}, {{}, {7}}};
  const std::vector<std::vector<std::vector<int>>> expected = {{{1, 3}, {}, {5}}, {}, {{}, {7}}};
  ro::Module<InnerLists> outer;
  ro::Module<ListOf> inner;
  ro::Module<Ident> ident;
  ro::Module<IsOdd> odd = ro::Module<IsOdd>().batch_size(3);
  auto program = ro::compile([&](ro::Port<Nested> x) {
    auto values = ident(F::expand(inner(F::expand(outer(x)))));
    return F::reduce(F::reduce(F::filter(values, odd(values))));
  });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run(rows);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(r.outputs[i].ok()) << issue_of(r.outputs[i]);
    EXPECT_EQ(plain(r.outputs[i].value()), expected[i]) << "row " << i;
  }
}

// ---- Deep broadcast --------------------------------------------------------------------

constexpr int kDepth = 1000;

struct DeepResult {
  std::vector<std::string> outputs;
  std::string error;
  std::size_t rpcs = 0;
  std::string deepest_key;
};

void* run_deep_chain(void* arg) {
  auto* result = static_cast<DeepResult*>(arg);
  try {
    ro::Module<OneChild> one = ro::Module<OneChild>().batch_size(2);
    ro::Module<Add> add = ro::Module<Add>().batch_size(2);
    ro::Module<First> first = ro::Module<First>().batch_size(2);
    auto program = ro::compile([&](ro::Port<int> x) {
      ro::Port<int> level = x;
      for (int d = 0; d < kDepth; ++d) level = F::expand(one(level));
      ro::Port<int> v = add(level, F::broadcast(x, level));
      for (int d = 0; d < kDepth; ++d) v = first(F::reduce(v));
      return v;
    });
    ro::testing::SyncExecutor ex(program);
    auto r = ex.run({1, 2});
    for (const auto& o : r.outputs) {
      result->outputs.push_back(o.ok() ? std::to_string(o.value()) : issue_of(o));
    }
    result->rpcs = ex.rpcs().size();
    for (const auto& rpc : ex.rpcs()) {
      if (rpc.call.rfind("Add#", 0) == 0) result->deepest_key = rpc.grains.at(0);
    }
  } catch (const std::exception& e) {
    result->error = e.what();
  }
  return nullptr;
}

TEST(Scenario, BroadcastOfARootValueIntoADepth1000ChainNeitherRecursesNorMaterialises) {
  // A small stack turns any recursion over the depth (in the compiler, the broadcast walk,
  // key printing or teardown) into a crash instead of a silent pass.
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
  DeepResult result;
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, &run_deep_chain, &result), 0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  pthread_attr_destroy(&attr);
  ASSERT_EQ(result.error, "");
  // Row value x reaches depth 1000 as x + 1000; Add adds the broadcast x.
  EXPECT_EQ(result.outputs, (std::vector<std::string>{"1002", "1004"}));
  // 1000 levels of OneChild and First, one Add, each over both rows in batches of 2.
  EXPECT_EQ(result.rpcs, 2u * kDepth + 1u);
  std::string key = "0";
  for (int d = 0; d < kDepth; ++d) key += "/0";
  EXPECT_EQ(result.deepest_key, key);
}

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

// ---- Reports, contracts, progress ------------------------------------------------------

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

TEST(Scenario, DownstreamGrainsBecomeReadyBeforeTheUpstreamStageFinishesOtherParents) {
  ro::Module<Split> split;
  ro::Module<Ident> page;
  ro::Module<SumGroup> sum;
  auto program =
      ro::compile([&](ro::Port<int> x) { return sum(F::reduce(page(F::expand(split(x))))); });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({2, 2, 1});
  EXPECT_EQ(r.outputs[0].value(), 20 + 21);
  const auto rpcs = log_of(ex.rpcs());
  // Document 0 is summed before the page stage has even started on document 1's pages.
  const long sum0 = position(rpcs, "SumGroup#2 [0]");
  const long page1 = position(rpcs, "Ident#1 [1/0]");
  ASSERT_GE(sum0, 0);
  ASSERT_GE(page1, 0);
  EXPECT_LT(sum0, page1) << ::testing::PrintToString(rpcs);
  EXPECT_LT(position(rpcs, "SumGroup#2 [1]"), position(rpcs, "Ident#1 [2/0]"));
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

// ---- The contract: outputs do not depend on the schedule -------------------------------

// Children of row r: 1 + r % 4 of them, valued 7r + i. A fails on v % 6 == 1, B on
// v % 4 == 3 (both on v % 12 == 7), the filter drops v % 5 == 0.
struct PartA {
  std::vector<ro::Row<int>> run(ro::Column<int> x) {
    std::vector<ro::Row<int>> out;
    for (int v : x) {
      if (v % 6 == 1) {
        out.emplace_back(ro::RecordFailure{"a:" + std::to_string(v)});
      } else {
        out.emplace_back(v);
      }
    }
    return out;
  }
};
struct PartB {
  std::vector<ro::Row<int>> run(ro::Column<int> x) {
    std::vector<ro::Row<int>> out;
    for (int v : x) {
      if (v % 4 == 3) {
        out.emplace_back(ro::RecordFailure{"b:" + std::to_string(v)});
      } else {
        out.emplace_back(2 * v);
      }
    }
    return out;
  }
};
struct KeepNot5 {
  std::vector<bool> run(ro::Column<int> x) {
    std::vector<bool> out;
    for (int v : x) out.push_back(v % 5 != 0);
    return out;
  }
};
struct Children {
  std::vector<std::vector<int>> run(ro::Column<int> x) {
    std::vector<std::vector<int>> out;
    for (int r : x) {
      std::vector<int> c;
      for (int i = 0; i < 1 + r % 4; ++i) c.push_back(7 * r + i);
      out.push_back(c);
    }
    return out;
  }
};

// The expected outputs, computed from the rules alone.
std::vector<std::string> reference_outputs(int rows, int* both_fail, int* multi_fail) {
  std::vector<std::string> out;
  for (int r = 0; r < rows; ++r) {
    std::string decided;
    std::string values;
    int failing = 0;
    for (int i = 0; i < 1 + r % 4; ++i) {
      const int v = 7 * r + i;
      const bool a_fails = v % 6 == 1, b_fails = v % 4 == 3;
      if (a_fails && b_fails) ++*both_fail;
      std::string cause;
      if (a_fails) {
        cause = "a:" + std::to_string(v);
      } else if (v % 5 != 0 && b_fails) {
        cause = "b:" + std::to_string(v);
      } else if (v % 5 == 0 && b_fails) {
        cause = "b:" + std::to_string(v);  // a failure dominates a drop
      }
      if (!cause.empty()) {
        ++failing;
        if (decided.empty()) decided = "suppressed(" + cause + ")";
        continue;
      }
      if (v % 5 == 0) continue;  // dropped, left out
      values += (values.empty() ? "" : ",") + std::to_string(3 * v);
    }
    if (failing > 1) ++*multi_fail;
    out.push_back(decided.empty() ? "[" + values + "]" : decided);
  }
  return out;
}

template <class Ex>
std::vector<std::string> run_contract(Ex& ex, int rows, const ro::RunOptions& options) {
  std::vector<int> input;
  for (int r = 0; r < rows; ++r) input.push_back(r);
  auto result = ex.run(input, options);
  std::vector<std::string> out;
  for (const auto& o : result.outputs) {
    if (!o.ok()) {
      out.push_back(issue_of(o));
      continue;
    }
    std::string values;
    for (int v : o.value()) values += (values.empty() ? "" : ",") + std::to_string(v);
    out.push_back("[" + values + "]");
  }
  return out;
}

TEST(Scenario, OutputsAndCausesAreTheSameForEveryLegalSchedule) {
  constexpr int kRows = 24;
  int both_fail = 0, multi_fail = 0;
  const auto expected = reference_outputs(kRows, &both_fail, &multi_fail);
  // The data must exercise the order-sensitive cases.
  ASSERT_GT(both_fail, 0);
  ASSERT_GT(multi_fail, 0);

  struct Config {
    int batch_a, batch_b, replicas;
    ro::RunOptions options;
    bool local;
  };
  std::vector<Config> configs;
  for (int ba : {1, 3}) {
    for (int bb : {1, 5}) {
      for (auto order : {ro::QueueOrder::fifo, ro::QueueOrder::lifo}) {
        ro::RunOptions o;
        o.queue_order = order;
        configs.push_back({ba, bb, 1, o, false});
      }
    }
  }
  {
    ro::RunOptions o;
    o.input_batch_size = 5;
    o.max_active_input_batches = 3;
    configs.push_back({2, 3, 1, o, false});
    o.reservation = ro::Reservation::parent_bound;
    o.queue_order = ro::QueueOrder::lifo;
    configs.push_back({4, 2, 1, o, false});
    o.input_batch_size = 0;
    configs.push_back({4, 2, 1, o, false});
    configs.push_back({2, 1, 3, o, true});
    o.reservation.reset();
    o.input_batch_size = 7;
    configs.push_back({1, 4, 4, o, true});
  }
  for (const Config& c : configs) {
    SCOPED_TRACE(::testing::Message()
                 << "batch " << c.batch_a << "/" << c.batch_b << " replicas " << c.replicas
                 << " input batch " << c.options.input_batch_size << " active "
                 << c.options.max_active_input_batches << " lifo "
                 << (c.options.queue_order == ro::QueueOrder::lifo) << " parent_bound "
                 << c.options.reservation.has_value() << " local " << c.local);
    ro::Module<Children> children;
    ro::Module<PartA> a = ro::Module<PartA>().batch_size(c.batch_a).replicas(c.replicas);
    ro::Module<PartB> b = ro::Module<PartB>().batch_size(c.batch_b).replicas(c.replicas);
    ro::Module<KeepNot5> keep = ro::Module<KeepNot5>().batch_size(2);
    ro::Module<Add> add = ro::Module<Add>().batch_size(c.batch_b);
    auto program = ro::compile([&](ro::Port<int> x) {
      auto kids = F::expand(children(x));
      auto kept = F::filter(a(kids), keep(kids));
      return F::reduce(add(kept, b(kids)));
    });
    ro::RunOptions options = c.options;
    options.progress = false;
    if (c.local) {
      ro::Executor ex(program);
      EXPECT_EQ(run_contract(ex, kRows, options), expected);
    } else {
      ro::testing::SyncExecutor ex(program);
      EXPECT_EQ(run_contract(ex, kRows, options), expected);
    }
  }
}

}  // namespace
