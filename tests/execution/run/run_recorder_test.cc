// The metrics of one run as they accumulate (src/execution/run/run_recorder.h): each RPC's
// size in order beside the histogram, failed RPCs, replaced actors charged to every Call of
// their pool, an input batch's entity, item and expansion counts, roots by outcome and the
// mean batch fill.
#include "execution/run/run_recorder.h"

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/udfs.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
namespace rd = rayorch::detail;

using Pages = test_udfs::Split;
using Twice = test_udfs::Double;
using test_udfs::Sum;

// Split#0 and Sum#2 on one pool each, Double's two Calls (#1 below the root, #3 at the root)
// on one shared pool.
struct Fixture {
  ro::Module<Pages> pages;
  ro::Module<Twice> twice = ro::Module<Twice>().batch_size(4);
  ro::Module<Sum> sum;
  std::shared_ptr<const rd::RuntimePlan> plan = ro::compile([this](ro::Port<int> n) {
                                                  auto each = twice(ro::F::expand(pages(n)));
                                                  return twice(sum(ro::F::reduce(each)));
                                                }).plan();

  int call(const std::string& name) const {
    for (std::size_t c = 0; c < plan->calls.size(); ++c)
      if (plan->calls[c].name == name) return static_cast<int>(c);
    throw std::invalid_argument("no Call " + name);
  }
};

rd::SourceData rows(std::size_t n) {
  rd::SourceData s;
  s.rows = n;
  return s;
}

TEST(RunRecorder, EachRpcSizeIsKeptInOrderBesideTheHistogram) {
  Fixture f;
  rd::RunRecorder r(*f.plan, rows(3), std::vector<int>(f.plan->pools.size(), 1));
  const int twice = f.call("Double#1");
  for (std::size_t grains : {4u, 1u, 4u, 3u}) r.rpc_ended(twice, grains, std::nullopt, 0.5, "ok");
  r.rpc_ended(twice, 2, std::nullopt, 0.1, "failed");
  r.close(true);
  const ro::CallMetrics& m = r.metrics().calls[static_cast<std::size_t>(twice)];
  EXPECT_EQ(m.rpc_sizes, (std::vector<std::uint32_t>{4, 1, 4, 3, 2}));
  EXPECT_EQ(m.batch_size_histogram,
            (std::map<std::size_t, std::uint64_t>{{1, 1}, {2, 1}, {3, 1}, {4, 2}}));
  EXPECT_EQ(m.rpcs, 5u);
  EXPECT_EQ(m.grain_dispatches, 14u);
  EXPECT_EQ(m.failed_rpcs, 1u);
  EXPECT_DOUBLE_EQ(m.busy_seconds, 2.1);
  EXPECT_DOUBLE_EQ(m.mean_batch_fill, 14.0 / (5 * 4));
}

TEST(RunRecorder, AReplacedActorCountsForEveryCallOfItsPool) {
  Fixture f;
  rd::RunRecorder r(*f.plan, rows(1), std::vector<int>(f.plan->pools.size(), 2));
  const int first = f.call("Double#1");
  const int second = f.call("Double#3");
  const int pool = f.plan->calls[static_cast<std::size_t>(first)].pool;
  ASSERT_EQ(f.plan->calls[static_cast<std::size_t>(second)].pool, pool);
  r.actor_replaced(pool);
  r.actor_replaced(pool);
  const ro::RunMetrics& m = r.metrics();
  EXPECT_EQ(m.actors_replaced, 2u);
  for (std::size_t c = 0; c < m.calls.size(); ++c) {
    const bool in_pool = f.plan->calls[c].pool == pool;
    EXPECT_EQ(m.calls[c].actors_replaced, in_pool ? 2u : 0u) << m.calls[c].call;
    EXPECT_EQ(m.calls[c].actors, 2);
  }
}

TEST(RunRecorder, AnInputBatchCountsItsEntitiesItemsAndExpansions) {
  Fixture f;
  rd::RunRecorder r(*f.plan, rows(5), std::vector<int>(f.plan->pools.size(), 1));
  r.batch_admitted(0, 0, 5, 1);
  const rd::Engine e(f.plan, rd::EngineOptions{}, 0, 5, {});
  r.fold(e);
  const ro::InputBatchMetrics& b = r.metrics().input_batches.at(0);
  // Before any Call ran: the rows alone, each with one Item per root-Domain Port and one
  // expansion to come.
  std::size_t root_ports = 0;
  for (const rd::PlanPort& p : f.plan->ports) root_ports += p.domain == 0 ? 1 : 0;
  EXPECT_EQ(b.entities, 5u);
  EXPECT_EQ(b.items, 5u * root_ports);
  EXPECT_EQ(b.expansions, 5u);
  EXPECT_EQ(b.released_values, 0u);
  EXPECT_EQ(b.rows, 5u);
}

TEST(RunRecorder, RootsAreCountedByOutcomeWithTheirCompletionTimes) {
  Fixture f;
  rd::RunRecorder r(*f.plan, rows(3), std::vector<int>(f.plan->pools.size(), 1));
  r.root_delivered(2, ro::Outcome::present);
  r.root_delivered(0, ro::Outcome::failed);
  r.root_delivered(1, ro::Outcome::present);
  const ro::RunMetrics& m = r.metrics();
  EXPECT_EQ(m.roots_by_outcome.at("present"), 2u);
  EXPECT_EQ(m.roots_by_outcome.at("failed"), 1u);
  ASSERT_EQ(m.root_completed_seconds.size(), 3u);
  EXPECT_LE(m.root_completed_seconds[2], m.root_completed_seconds[0]);
  EXPECT_LE(m.root_completed_seconds[0], m.root_completed_seconds[1]);
}

}  // namespace
