// Integration tests of the embedded local executor (DESIGN 3.4 and 6) through ro::Executor:
// cross-parent batching and streaming. An RPC mixes children of several parents, a finished
// document is delivered while a long one is blocked, and an exception from the streaming
// callback stops the run cleanly.
#include <atomic>
#include <memory>
#include <numeric>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "support/executor_testing.h"
#include "support/local_executor_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using executor_testing::Gate;
using local_executor_testing::Counted;
using local_executor_testing::expected_sums;
using local_executor_testing::quiet;
using local_executor_testing::Split;
using local_executor_testing::Stats;
using local_executor_testing::Sum;
using local_executor_testing::values_of;

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
