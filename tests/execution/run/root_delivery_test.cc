// Root delivery (src/execution/run/root_delivery.h): each root an engine finished reaches the
// sink once, in the order it finished, numbered by the run's row, with its outputs' outcomes,
// causes, origins and values resolved from the store; the root's outcome (its first output
// that is not present) is counted in the metrics, the error budget (under the caller's row)
// and the observers' on_root, after the sink. A store that fetches gets every present value
// of the finished roots announced at once, and a root whose values it lost waits for the
// engine to rebuild them. Real engines (runtime/engine.h) driven by hand through EngineRig
// (support/runtime_harness.h) finish the roots; nothing runs.
#include "execution/run/root_delivery.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "support/root_delivery_rig.h"
#include "support/runtime_harness.h"
#include "support/runtime_udfs.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

#include "execution/value_store.h"

namespace {

namespace F = rayorch::F;
using runtime_test::EngineRig;
using runtime_test::P;
using runtime_test::Q;
using ::testing::HasSubstr;
using namespace root_delivery_test;
namespace ro = rayorch;
namespace rd = rayorch::detail;

using Rows = std::vector<ro::Row<int>>;
using KeptRows = std::tuple<std::vector<ro::Row<int>>, std::vector<bool>>;  // P's result

TEST(RootDelivery, EachRootReachesTheSinkOnceInTheOrderItsEngineFinishedIt) {
  ro::Module<Q> q = ro::Module<Q>().batch_size(1);
  auto program = ro::compile([&](ro::Port<int> x) { return q(x); });
  EngineRig rig(program, {10, 20, 30, 40});
  RigStore store(rig);
  Delivery run(program.plan(), 4);
  const std::vector<rd::Invocation> b = reserve_each(rig, rig.call("Q#0"), 4);

  run.deliver(rig.engine(), store);  // no root finished yet
  EXPECT_TRUE(run.got.empty());
  rig.commit(b[2], Rows{102});
  run.deliver(rig.engine(), store);
  EXPECT_EQ(run.rows(), (std::vector<std::size_t>{2}));
  rig.commit(b[0], Rows{100});
  rig.commit(b[3], Rows{103});
  run.deliver(rig.engine(), store);
  run.deliver(rig.engine(), store);  // nothing finished since: nothing delivered again
  EXPECT_EQ(run.rows(), (std::vector<std::size_t>{2, 0, 3}));
  rig.commit(b[1], Rows{101});
  run.deliver(rig.engine(), store);
  ASSERT_EQ(run.rows(), (std::vector<std::size_t>{2, 0, 3, 1}));

  for (const Delivered& d : run.got) {
    SCOPED_TRACE("row " + std::to_string(d.row));
    EXPECT_EQ(d.outcomes, std::vector<ro::Outcome>{ro::Outcome::present});
    EXPECT_EQ(d.causes, std::vector<std::string>{""});
    EXPECT_EQ(d.values, std::vector<std::optional<int>>{100 + static_cast<int>(d.row)});
    EXPECT_FALSE(d.origins.at(0).has_value());
    EXPECT_EQ(d.below_root, std::vector<bool>{false});
  }
  EXPECT_EQ(run.delivery.delivered(), 4u);
  EXPECT_EQ(run.roots_by_outcome(), (std::map<std::string, std::uint64_t>{{"present", 4}}));
  // Completion times follow the delivery order.
  EXPECT_GT(run.completed(2), 0.0);
  EXPECT_LE(run.completed(2), run.completed(0));
  EXPECT_LE(run.completed(0), run.completed(3));
  EXPECT_LE(run.completed(3), run.completed(1));
  EXPECT_FALSE(run.delivery.budget().exceeded());
  EXPECT_EQ(run.root_events().size(), 4u);
}

TEST(RootDelivery, AFailedRootCarriesItsCauseAndWhereItWasDecidedButNoValue) {
  ro::Module<Q> q = ro::Module<Q>().batch_size(1);
  auto program = ro::compile([&](ro::Port<int> x) { return q(x); });
  EngineRig rig(program, {1, 2});
  RigStore store(rig);
  Delivery run(program.plan(), 2);
  const std::vector<rd::Invocation> b = reserve_each(rig, rig.call("Q#0"), 2);
  rig.commit(b[0], Rows{7});
  rig.commit(b[1], Rows{ro::RecordFailure{"page 2 unreadable"}});
  run.deliver(rig.engine(), store);

  ASSERT_EQ(run.rows(), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(run.got[0].values, std::vector<std::optional<int>>{7});
  const Delivered& failed = run.got[1];
  EXPECT_EQ(failed.outcomes, std::vector<ro::Outcome>{ro::Outcome::failed});
  EXPECT_EQ(failed.causes, std::vector<std::string>{"page 2 unreadable"});
  EXPECT_EQ(failed.values, std::vector<std::optional<int>>{std::nullopt});
  EXPECT_EQ(failed.origins.at(0),
            (ro::IssueOrigin{.call = "Q#0", .call_index = 0, .entity = "1", .attempts = 1}));
  EXPECT_EQ(run.roots_by_outcome(),
            (std::map<std::string, std::uint64_t>{{"failed", 1}, {"present", 1}}));
  ASSERT_EQ(run.root_events().size(), 2u);
  EXPECT_EQ(run.root_events()[0].outcome, ro::Outcome::present);
  EXPECT_EQ(run.root_events()[1].outcome, ro::Outcome::failed);
  EXPECT_EQ(run.delivery.delivered(), 2u);
}

TEST(RootDelivery, ASuppressedRootCarriesTheUpstreamCauseAndSpendsTheErrorBudget) {
  ro::Module<Q> first = ro::Module<Q>().batch_size(1);
  ro::Module<Q> second = ro::Module<Q>().batch_size(1);
  auto program = ro::compile([&](ro::Port<int> x) { return second(first(x)); });
  EngineRig rig(program, {1, 2});
  RigStore store(rig);
  ro::RunOptions options;
  options.max_failed_roots = 0;  // the first failed or suppressed root spends it
  Delivery run(program.plan(), 2, options);
  const std::vector<rd::Invocation> b = reserve_each(rig, rig.call("Q#0"), 2);
  rig.commit(b[1], Rows{2});
  rig.commit(rig.reserve(rig.call("Q#1")), Rows{2});
  run.deliver(rig.engine(), store);
  ASSERT_EQ(run.rows(), (std::vector<std::size_t>{1}));
  EXPECT_FALSE(run.delivery.budget().exceeded());  // a present root costs nothing

  rig.commit(b[0], Rows{ro::RecordFailure{"encrypted"}});
  run.deliver(rig.engine(), store);
  ASSERT_EQ(run.rows(), (std::vector<std::size_t>{1, 0}));
  const Delivered& d = run.got[1];
  EXPECT_EQ(d.outcomes, std::vector<ro::Outcome>{ro::Outcome::suppressed});
  EXPECT_EQ(d.causes, std::vector<std::string>{"encrypted"});
  EXPECT_EQ(d.values, std::vector<std::optional<int>>{std::nullopt});
  ASSERT_TRUE(d.origins.at(0).has_value());
  EXPECT_EQ(d.origins[0]->call, "Q#0");
  EXPECT_EQ(d.origins[0]->entity, "0");
  ASSERT_TRUE(run.delivery.budget().exceeded());
  EXPECT_THAT(run.delivery.budget().error(),
              HasSubstr("1 of 2 delivered roots failed or were suppressed"));
  EXPECT_THAT(run.delivery.budget().error(), HasSubstr("row 0: suppressed at Q#0: encrypted"));
  EXPECT_EQ(run.roots_by_outcome(),
            (std::map<std::string, std::uint64_t>{{"present", 1}, {"suppressed", 1}}));
}

TEST(RootDelivery, TheRootsOutcomeIsThatOfItsFirstOutputThatIsNotPresent) {
  ro::Module<P> p = ro::Module<P>().batch_size(1);
  ro::Module<Q> q = ro::Module<Q>().batch_size(1);
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [value, keep] = p(x);
    return std::make_tuple(F::filter(value, keep), q(x));
  });
  EngineRig rig(program, {0, 1, 2, 3});
  RigStore store(rig);
  ro::RunOptions options;
  options.max_failed_roots = 2;  // rows 1 and 3 fail; row 2 is dropped and does not count
  Delivery run(program.plan(), 4, options);
  const std::vector<rd::Invocation> pb = reserve_each(rig, rig.call("P#0"), 4);
  const std::vector<rd::Invocation> qb = reserve_each(rig, rig.call("Q#1"), 4);
  // Row: (P's value and keep flag, Q's row).
  rig.commit(pb[0], KeptRows{{10}, {true}});
  rig.commit(qb[0], Rows{20});
  rig.commit(pb[1], KeptRows{{11}, {true}});
  rig.commit(qb[1], Rows{ro::RecordFailure{"q says 1"}});
  rig.commit(pb[2], KeptRows{{12}, {false}});
  rig.commit(qb[2], Rows{ro::RecordFailure{"q says 2"}});
  rig.commit(pb[3], KeptRows{{ro::RecordFailure{"p says 3"}}, {false}});
  rig.commit(qb[3], Rows{23});
  run.deliver(rig.engine(), store);

  ASSERT_EQ(run.rows(), (std::vector<std::size_t>{0, 1, 2, 3}));
  using O = ro::Outcome;
  EXPECT_EQ(run.got[0].outcomes, (std::vector<O>{O::present, O::present}));
  EXPECT_EQ(run.got[0].values, (std::vector<std::optional<int>>{10, 20}));
  EXPECT_EQ(run.got[1].outcomes, (std::vector<O>{O::present, O::failed}));
  EXPECT_EQ(run.got[1].values, (std::vector<std::optional<int>>{11, std::nullopt}));
  EXPECT_EQ(run.got[1].causes, (std::vector<std::string>{"", "q says 1"}));
  // A plain drop has no cause and no origin; the failure after it is still delivered.
  EXPECT_EQ(run.got[2].outcomes, (std::vector<O>{O::dropped, O::failed}));
  EXPECT_EQ(run.got[2].causes, (std::vector<std::string>{"", "q says 2"}));
  EXPECT_EQ(run.got[2].values, (std::vector<std::optional<int>>{std::nullopt, std::nullopt}));
  EXPECT_FALSE(run.got[2].origins[0].has_value());
  ASSERT_TRUE(run.got[2].origins[1].has_value());
  EXPECT_EQ(run.got[2].origins[1]->call, "Q#1");
  EXPECT_EQ(run.got[3].outcomes, (std::vector<O>{O::failed, O::present}));
  EXPECT_EQ(run.got[3].values, (std::vector<std::optional<int>>{std::nullopt, 23}));

  std::vector<O> roots;
  for (const ro::RootEvent& e : run.root_events()) roots.push_back(e.outcome);
  EXPECT_EQ(roots, (std::vector<O>{O::present, O::failed, O::dropped, O::failed}));
  EXPECT_EQ(run.roots_by_outcome(),
            (std::map<std::string, std::uint64_t>{{"dropped", 1}, {"failed", 2}, {"present", 1}}));
  EXPECT_FALSE(run.delivery.budget().exceeded()) << run.delivery.budget().error();
  EXPECT_EQ(run.delivery.delivered(), 4u);
}

TEST(RootDelivery, TheSinkGetsTheRunsRowAndTheBudgetAndObserversTheCallersRow) {
  ro::Module<Q> q = ro::Module<Q>().batch_size(1);
  auto program = ro::compile([&](ro::Port<int> x) { return q(x); });
  EngineRig rig(program, {1, 2, 3});
  RigStore store(rig);
  ro::RunOptions options;
  options.max_failed_roots = 1;
  Delivery run(program.plan(), 3, options, {7, 9, 11});  // a resumed run: the caller's rows
  const std::vector<rd::Invocation> b = reserve_each(rig, rig.call("Q#0"), 3);
  rig.commit(b[0], Rows{ro::RecordFailure{"bad a"}});
  run.deliver(rig.engine(), store);
  EXPECT_FALSE(run.delivery.budget().exceeded());  // 1 failed root: within the budget
  rig.commit(b[1], Rows{2});
  rig.commit(b[2], Rows{ro::RecordFailure{"bad c"}});
  run.deliver(rig.engine(), store);

  EXPECT_EQ(run.rows(), (std::vector<std::size_t>{0, 1, 2}));
  std::vector<std::size_t> observed;
  for (const ro::RootEvent& e : run.root_events()) observed.push_back(e.row);
  EXPECT_EQ(observed, (std::vector<std::size_t>{7, 9, 11}));
  // The metrics are kept by the run's row.
  for (std::size_t row = 0; row < 3; ++row) EXPECT_GT(run.completed(row), 0.0) << row;
  ASSERT_TRUE(run.delivery.budget().exceeded());
  const std::string& error = run.delivery.budget().error();
  EXPECT_THAT(error, HasSubstr("2 of 3 delivered roots failed or were suppressed"));
  EXPECT_THAT(error, HasSubstr("row 7: failed at Q#0: bad a"));
  EXPECT_THAT(error, HasSubstr("row 11: failed at Q#0: bad c"));
}

TEST(RootDelivery, TheSinkSeesARootBeforeTheObserversAndTheEngineThenReleasesItsValue) {
  ro::Module<Q> q = ro::Module<Q>().batch_size(1);
  int out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto y = q(x);
    out = y.id();
    return y;
  });
  EngineRig rig(program, {1, 2});
  RigStore store(rig);
  Delivery run(program.plan(), 2);
  const std::vector<rd::Invocation> b = reserve_each(rig, rig.call("Q#0"), 2);
  rig.commit(b[1], Rows{21});
  rig.commit(b[0], Rows{20});
  // A finished root's value is held for its delivery.
  EXPECT_FALSE(rig->item_released(out, 0));
  EXPECT_FALSE(rig->item_released(out, 1));
  run.deliver(rig.engine(), store);
  rig.advance();

  EXPECT_EQ(run.log, (std::vector<std::string>{"sink 1", "on_root 1", "sink 0", "on_root 0"}));
  EXPECT_EQ(run.got.at(0).values, std::vector<std::optional<int>>{21});
  EXPECT_EQ(run.got.at(1).values, std::vector<std::optional<int>>{20});
  for (const ro::RootEvent& e : run.root_events()) {
    EXPECT_FALSE(e.restored);
    EXPECT_EQ(e.outcome, ro::Outcome::present);
    EXPECT_DOUBLE_EQ(e.seconds, run.completed(e.row)) << e.row;
  }
  EXPECT_TRUE(rig->item_released(out, 0));
  EXPECT_TRUE(rig->item_released(out, 1));
}

TEST(RootDelivery, AnInputBatchPastTheFirstNumbersItsRootsFromItsFirstRow) {
  // No Call: the roots finish as the engine starts, with the source values, resolved in the
  // in-process store.
  auto program = ro::compile([](ro::Port<int> x) { return x; });
  const auto plan = program.plan();
  rd::ValueStore store(plan);
  store.put(rd::make_block_id(1, 0), std::make_shared<rd::VectorBlock<int>>(std::vector{40, 50}));
  rd::Engine engine(plan, rd::EngineOptions{.batch_index = 1}, 3, 2);  // rows 3 and 4 of the run
  engine.advance();
  Delivery run(plan, 5, {}, {100, 101, 102, 103, 104});
  run.deliver(engine, store);

  EXPECT_EQ(run.rows(), (std::vector<std::size_t>{3, 4}));
  EXPECT_EQ(run.got.at(0).values, std::vector<std::optional<int>>{40});
  EXPECT_EQ(run.got.at(1).values, std::vector<std::optional<int>>{50});
  std::vector<std::size_t> observed;
  for (const ro::RootEvent& e : run.root_events()) observed.push_back(e.row);
  EXPECT_EQ(observed, (std::vector<std::size_t>{103, 104}));
  for (std::size_t row = 0; row < 3; ++row) EXPECT_EQ(run.completed(row), 0.0) << row;
  EXPECT_GT(run.completed(3), 0.0);
  EXPECT_GT(run.completed(4), 0.0);
  EXPECT_EQ(run.delivery.delivered(), 2u);
}

TEST(RootDelivery, AStoreThatFetchesIsToldEveryPresentValueOfTheFinishedRootsAtOnce) {
  ro::Module<Q> q = ro::Module<Q>().batch_size(1);
  int out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto y = q(x);
    out = y.id();
    return y;
  });
  EngineRig rig(program, {1, 2, 3, 4});
  RigStore remote(rig, /*fetches=*/true);
  Delivery run(program.plan(), 4);
  const std::vector<rd::Invocation> b = reserve_each(rig, rig.call("Q#0"), 4);
  rig.commit(b[0], Rows{10});
  rig.commit(b[1], Rows{ro::RecordFailure{"no value"}});
  rig.commit(b[2], Rows{12});
  const std::vector<rd::Binding> wanted = {rig->item_binding(out, 0), rig->item_binding(out, 2)};
  run.deliver(rig.engine(), remote);

  ASSERT_EQ(run.rows(), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(run.got[0].values, std::vector<std::optional<int>>{10});
  EXPECT_EQ(run.got[2].values, std::vector<std::optional<int>>{12});
  // One round trip for the present values of all three roots, before any is resolved; each
  // root's values are checked for a loss before they are resolved.
  ASSERT_EQ(remote.prefetched.size(), 1u);
  EXPECT_EQ(remote.prefetched[0], wanted);
  EXPECT_EQ(remote.calls, (std::vector<std::string>{"prefetch 2", "unreadable", "resolve",
                                                    "unreadable", "unreadable", "resolve"}));
  // A single finished root needs no announcement.
  remote.calls.clear();
  rig.commit(b[3], Rows{13});
  run.deliver(rig.engine(), remote);
  EXPECT_EQ(remote.calls, (std::vector<std::string>{"unreadable", "resolve"}));
  EXPECT_EQ(run.rows(), (std::vector<std::size_t>{0, 1, 2, 3}));

  // A store in this process is never asked either.
  EngineRig local_rig(program, {1, 2});
  RigStore local(local_rig);
  Delivery local_run(program.plan(), 2);
  const std::vector<rd::Invocation> lb = reserve_each(local_rig, local_rig.call("Q#0"), 2);
  local_rig.commit(lb[0], Rows{1});
  local_rig.commit(lb[1], Rows{2});
  local_run.deliver(local_rig.engine(), local);
  EXPECT_EQ(local_run.rows(), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(local.calls, (std::vector<std::string>{"resolve", "resolve"}));
}

TEST(RootDelivery, ARootWhoseValuesWereLostWaitsForTheirRebuildAndIsDeliveredOnce) {
  ro::Module<Q> q = ro::Module<Q>().batch_size(1);
  int out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto y = q(x);
    out = y.id();
    return y;
  });
  EngineRig rig(program, {1, 2});
  RigStore remote(rig, /*fetches=*/true);
  Delivery run(program.plan(), 2);
  const int call = rig.call("Q#0");
  const std::vector<rd::Invocation> b = reserve_each(rig, call, 2);
  rig.commit(b[0], Rows{10});
  rig.commit(b[1], Rows{11});
  remote.lost.insert(rig->item_binding(out, 0).block);  // root 0's value went with a node
  run.deliver(rig.engine(), remote);

  // Root 0 is held back: not delivered, not counted, not observed; root 1 goes on.
  EXPECT_EQ(run.rows(), (std::vector<std::size_t>{1}));
  EXPECT_EQ(run.delivery.delivered(), 1u);
  EXPECT_EQ(run.root_events().size(), 1u);
  EXPECT_EQ(run.roots_by_outcome(), (std::map<std::string, std::uint64_t>{{"present", 1}}));
  EXPECT_EQ(run.completed(0), 0.0);
  EXPECT_FALSE(rig->item_released(out, 0));

  // The engine re-executes the Grain that made the value; once rebuilt, the root finishes
  // again and is delivered with the rebuilt value, once.
  rig.advance();
  ASSERT_TRUE(rig->has_reexecution(call));
  const rd::Invocation again = rig.reserve(call);
  EXPECT_EQ(rig.keys(again), "0");
  remote.lost.clear();
  rig.commit(again, Rows{10});
  run.deliver(rig.engine(), remote);
  run.deliver(rig.engine(), remote);
  EXPECT_EQ(run.rows(), (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(run.got.at(1).values, std::vector<std::optional<int>>{10});
  EXPECT_EQ(run.got.at(1).outcomes, std::vector<ro::Outcome>{ro::Outcome::present});
  EXPECT_EQ(run.delivery.delivered(), 2u);
  EXPECT_EQ(run.roots_by_outcome(), (std::map<std::string, std::uint64_t>{{"present", 2}}));
  EXPECT_GT(run.completed(0), 0.0);
}

}  // namespace
