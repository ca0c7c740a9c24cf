// The streaming callback's contract, the same on every executor: rows arrive on the calling
// thread, in completion order or (ordered_stream) in source order as soon as every earlier
// row is done, and an exception from the callback aborts the run and keeps the executor
// (as rayorch::RunInterrupted does).
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;

struct Pages {  // row i has counts[i] pages; a document finishes when its pages are done
  std::vector<std::vector<int>> run(ro::Column<int> counts) {
    std::vector<std::vector<int>> out;
    for (int n : counts) out.emplace_back(static_cast<std::size_t>(n), n);
    return out;
  }
};
struct Count {
  std::vector<int> run(ro::Column<ro::Group<int>> g) {
    std::vector<int> out;
    for (const auto& x : g) out.push_back(static_cast<int>(x.size()));
    return out;
  }
};
struct Slow {  // pages of long documents take longer, so short ones finish first
  std::vector<int> run(ro::Column<int> xs) {
    for (int x : xs) std::this_thread::sleep_for(std::chrono::microseconds(200 * x));
    return std::vector<int>(xs.begin(), xs.end());
  }
};

template <class Ex>
void check_contract(Ex& ex, const std::vector<int>& counts) {
  const auto caller = std::this_thread::get_id();
  std::vector<std::size_t> order;
  ex.run(counts, {.ordered_stream = true, .progress = false},
         [&](std::size_t row, ro::Output<int> out) {
           EXPECT_EQ(std::this_thread::get_id(), caller);
           ASSERT_TRUE(out.ok());
           EXPECT_EQ(out.value(), counts[row]);
           order.push_back(row);
         });
  std::vector<std::size_t> expected(counts.size());
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = i;
  EXPECT_EQ(order, expected);

  EXPECT_THROW(ex.run(counts, {.progress = false},
                      [&](std::size_t, ro::Output<int>) { throw std::runtime_error("sink full"); }),
               std::runtime_error);
  // The executor stays open with its actors and runs again.
  EXPECT_FALSE(ex.closed());
  EXPECT_EQ(ex.run(counts, {.progress = false}).outputs.size(), counts.size());
}

// rayorch::RunInterrupted from the callback stops the run but keeps the executor: the next
// run starts afresh and delivers every row.
template <class Ex>
void check_interrupt(Ex& ex, const std::vector<int>& counts) {
  struct Stop : ro::RunInterrupted {};
  std::size_t delivered = 0;
  EXPECT_THROW(ex.run(counts, {.progress = false},
                      [&](std::size_t, ro::Output<int>) {
                        ++delivered;
                        throw Stop{};
                      }),
               Stop);
  EXPECT_EQ(delivered, 1U);
  EXPECT_FALSE(ex.closed());
  std::vector<int> got(counts.size(), -1);
  ex.run(counts, {.progress = false}, [&](std::size_t row, ro::Output<int> out) {
    ASSERT_TRUE(out.ok());
    got[row] = out.value();
  });
  EXPECT_EQ(got, counts);
}

TEST(Streaming, OrderedDeliveryAndCallbackExceptionsOnEveryExecutor) {
  const std::vector<int> counts = {12, 1, 6, 0, 3, 9, 2};
  auto build = [](ro::Module<Pages>& p, ro::Module<Slow>& s, ro::Module<Count>& c) {
    return ro::compile([&](ro::Port<int> n) { return c(ro::F::reduce(s(ro::F::expand(p(n))))); });
  };
  {
    ro::Module<Pages> p;
    ro::Module<Slow> s = ro::Module<Slow>().replicas(3).batch_size(2);
    ro::Module<Count> c;
    auto program = build(p, s, c);
    ro::Executor ex(program);
    check_interrupt(ex, counts);
    check_contract(ex, counts);
  }
  {
    ro::Module<Pages> p;
    ro::Module<Slow> s = ro::Module<Slow>().batch_size(2);
    ro::Module<Count> c;
    auto program = build(p, s, c);
    ro::testing::SyncExecutor ex(program);
    check_interrupt(ex, counts);
    check_contract(ex, counts);
  }
}

}  // namespace
