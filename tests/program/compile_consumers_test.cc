// Which Calls feed which: computed once by the compiler into RuntimePlan::call_consumers.
#include <algorithm>
#include <vector>

#include "support/udfs.h"
#include <gtest/gtest.h>

#include "program/plan.h"

namespace {

namespace ro = rayorch;
using test_udfs::Double;
using test_udfs::IsEven;
using test_udfs::Split;
using test_udfs::Sum;

std::vector<int> sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(CallConsumers, FollowValuesThroughFiltersAndExpandsButNotMasksOrReduces) {
  ro::Module<Double> first;
  ro::Module<IsEven> even;
  ro::Module<Double> second;
  ro::Module<Split> split;
  ro::Module<Double> child;
  ro::Module<Sum> sum;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto a = first(x);                            // Double#0
    auto kept = ro::F::filter(a, even(a));        // IsEven#1 reads a; its mask ends the path
    auto lists = split(second(kept));             // Double#2 reads a through the filter
    auto children = child(ro::F::expand(lists));  // Split#3 feeds Double#4 through the expand
    return sum(ro::F::reduce(children));          // the reduce ends the path to Sum#5
  });
  const rayorch::detail::RuntimePlan& plan = *program.plan();
  ASSERT_EQ(plan.calls.size(), 6u);
  ASSERT_EQ(plan.calls[3].name, "Split#3");
  const rayorch::detail::CallConsumers& c = plan.call_consumers;
  ASSERT_EQ(c.direct.size(), 6u);
  EXPECT_EQ(sorted(c.direct[0]), (std::vector<int>{1, 2}));
  EXPECT_EQ(sorted(c.direct[1]), std::vector<int>{});
  EXPECT_EQ(sorted(c.direct[2]), std::vector<int>{3});
  EXPECT_EQ(sorted(c.direct[3]), std::vector<int>{4});
  EXPECT_EQ(sorted(c.direct[4]), std::vector<int>{});
  EXPECT_EQ(sorted(c.direct[5]), std::vector<int>{});
  ASSERT_EQ(c.upstream.size(), 6u);
  EXPECT_EQ(sorted(c.upstream[0]), std::vector<int>{});
  EXPECT_EQ(sorted(c.upstream[1]), std::vector<int>{0});
  EXPECT_EQ(sorted(c.upstream[2]), std::vector<int>{0});
  EXPECT_EQ(sorted(c.upstream[3]), (std::vector<int>{0, 2}));
  EXPECT_EQ(sorted(c.upstream[4]), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(sorted(c.upstream[5]), std::vector<int>{});
}

}  // namespace
