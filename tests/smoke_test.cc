// The smallest end-to-end check: expand -> batched Call -> reduce, on both executors.
#include "support/udfs.h"
#include <gtest/gtest.h>

namespace ro = rayorch;
using test_udfs::Double;
using test_udfs::Split;
using test_udfs::Sum;

TEST(Smoke, ExpandDoubleReduce) {
  ro::Module<Split> split;
  ro::Module<Double> dbl = ro::Module<Double>().batch_size(4);
  ro::Module<Sum> sum;
  auto program = ro::compile(
      [&](ro::Port<int> n) { return sum(ro::F::reduce(dbl(ro::F::expand(split(n))))); });
  // Row n holds 2 * (0 + 1 + ... + n-1).
  const std::vector<int> expected{0, 0, 2, 6};

  ro::testing::SyncExecutor sync(program);
  auto r = sync.run({0, 1, 2, 3});
  ASSERT_EQ(r.outputs.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(r.outputs[i].value(), expected[i]);
  // Row 3's three pages fit one Double RPC (batch size 4).
  bool one_rpc = false;
  for (const auto& rpc : sync.rpcs()) one_rpc |= rpc.to_string() == "Double#1 [3/0 3/1 3/2] g0";
  EXPECT_TRUE(one_rpc);

  ro::Executor local(program);
  auto r2 = local.run({0, 1, 2, 3});
  ASSERT_EQ(r2.outputs.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(r2.outputs[i].value(), expected[i]);
}
