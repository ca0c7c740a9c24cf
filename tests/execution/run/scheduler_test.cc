// Which READY work an idle slot gets (src/execution/run/scheduler.h): the lowest admitted
// input batch first, a pool's Calls in turn (a co-located pool's readers of its own outputs
// first), at most a batch, and fewer where the tail split caps it. Real engines (runtime/engine.h)
// hold the READY work; nothing runs.
#include "execution/run/scheduler.h"

#include <memory>
#include <tuple>
#include <vector>

#include "support/udfs.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
namespace rd = rayorch::detail;

using Twice = test_udfs::Double;

// `rows` source rows as input batch `index`, its READY work published.
std::unique_ptr<rd::Engine> admitted(const std::shared_ptr<const rd::RuntimePlan>& plan,
                                     std::size_t index, std::size_t first, std::size_t rows) {
  rd::EngineOptions options;
  options.batch_index = index;
  auto e = std::make_unique<rd::Engine>(plan, options, first, rows,
                                        std::vector<std::vector<std::uint8_t>>{});
  e->advance();
  return e;
}

TEST(Scheduler, TheLowestAdmittedInputBatchIsServedFirstABatchAtATime) {
  ro::Module<Twice> twice = ro::Module<Twice>().batch_size(2);
  const auto plan = ro::compile([&](ro::Port<int> x) { return twice(x); }).plan();
  std::vector<std::unique_ptr<rd::Engine>> active;
  active.push_back(admitted(plan, 0, 0, 3));
  active.push_back(admitted(plan, 1, 3, 2));
  rd::Scheduler scheduler(plan, ro::RunOptions{});
  std::vector<std::pair<std::size_t, std::size_t>> picks;  // (input batch, Grains)
  while (auto rpc = scheduler.pick(0, false, active))
    picks.emplace_back(rpc->input_batch, rpc->grains.size());
  EXPECT_EQ(picks, (std::vector<std::pair<std::size_t, std::size_t>>{{0, 2}, {0, 1}, {1, 2}}));
  EXPECT_EQ(scheduler.next_hold_deadline(), rd::Scheduler::Clock::time_point::max());
}

TEST(Scheduler, ThePoolsCallsAreServedInTurn) {
  ro::Module<Twice> twice = ro::Module<Twice>().batch_size(1);
  const auto plan =
      ro::compile([&](ro::Port<int> x) { return std::make_tuple(twice(x), twice(x)); }).plan();
  ASSERT_EQ(plan->pools.size(), 1u);
  ASSERT_EQ(plan->pools[0].calls.size(), 2u);
  std::vector<std::unique_ptr<rd::Engine>> active;
  active.push_back(admitted(plan, 0, 0, 2));
  rd::Scheduler scheduler(plan, ro::RunOptions{});
  std::vector<int> calls;
  while (auto rpc = scheduler.pick(0, false, active)) calls.push_back(rpc->call);
  EXPECT_EQ(calls, (std::vector<int>{0, 1, 0, 1}));
}

// Commits `rpc` of `e` as if `values` came back (the engine reads only the report).
void commit(const rd::RuntimePlan& plan, rd::Engine& e, const rd::Invocation& rpc,
            std::vector<int> values) {
  std::vector<std::pair<rd::BlockId, rd::BlockRef>> blocks;
  rd::Report report =
      rd::make_report(plan, rpc, rd::convert_result(std::move(values), rpc.grains.size()), blocks);
  std::vector<rd::BlockId> created;
  for (const auto& [id, block] : blocks) created.push_back(id);
  ASSERT_EQ(e.commit(report, created), rd::CommitStatus::accepted);
  e.advance();
}

TEST(Scheduler, ACoLocatedPoolServesTheReadersOfItsOwnOutputsFirst) {
  // One co-located pool: Other#0 and Make#1 read the source, Read#2 reads Make's output.
  ro::Module<Twice> other = ro::Module<Twice>().colocate("g");
  ro::Module<Twice> make = ro::Module<Twice>().colocate("g");
  ro::Module<test_udfs::AddConst> read = ro::Module<test_udfs::AddConst>().colocate("g");
  const auto plan = ro::compile([&](ro::Port<int> x) {
                      auto o = other(x);
                      return std::make_tuple(o, read(make(x), 1));
                    }).plan();
  ASSERT_EQ(plan->pools.size(), 1u);
  std::vector<std::unique_ptr<rd::Engine>> active;
  active.push_back(admitted(plan, 0, 0, 3));
  rd::Scheduler scheduler(plan, ro::RunOptions{});
  // In turn while no reader has work: Other, Make, then Other again (Read has none).
  std::vector<rd::Invocation> picks;
  for (int k = 0; k < 3; ++k) picks.push_back(*scheduler.pick(0, false, active));
  ASSERT_EQ(picks[0].call, 0);
  ASSERT_EQ(picks[1].call, 1);
  ASSERT_EQ(picks[2].call, 0);
  // Make's first value is in: Read takes it next, though Make's turn has come.
  commit(*plan, *active[0], picks[1], {0});
  auto next = scheduler.pick(0, false, active);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->call, 2);
  // A pool without co-location keeps its turns (ThePoolsCallsAreServedInTurn).
}

TEST(Scheduler, TheTailSplitCapsTheReadyGrainsTaken) {
  ro::Module<Twice> twice = ro::Module<Twice>().batch_size(8);
  const auto plan = ro::compile([&](ro::Port<int> x) { return twice(x); }).plan();
  std::vector<std::unique_ptr<rd::Engine>> active;
  active.push_back(admitted(plan, 0, 0, 5));
  rd::Scheduler scheduler(plan, ro::RunOptions{});
  auto first = scheduler.pick(0, false, active, 2);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->grains.size(), 2u);
  auto rest = scheduler.pick(0, false, active);
  ASSERT_TRUE(rest);
  EXPECT_EQ(rest->grains.size(), 3u);
  EXPECT_FALSE(scheduler.pick(0, false, active));
}

}  // namespace
