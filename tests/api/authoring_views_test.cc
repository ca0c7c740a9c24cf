// The authoring API (DESIGN 3.1-3.3), its views: Column and Group index and iterate without
// copying, a Group keeps its storage alive, groups arrive in ordinal order inside RPCs and
// reduced group outputs outlive the executor.
#include <algorithm>
#include <iterator>
#include <memory>
#include <numeric>
#include <ranges>
#include <string>
#include <vector>

#include "support/output_values.h"
#include "support/udfs.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
using output_values::values;
using test_udfs::Double;
using test_udfs::Split;
using test_udfs::ToText;
using ::testing::ElementsAre;

static_assert(std::random_access_iterator<ro::Column<int>::iterator>);
static_assert(std::random_access_iterator<ro::Group<int>::iterator>);
static_assert(std::ranges::random_access_range<ro::Column<std::string>>);
static_assert(std::ranges::random_access_range<ro::Group<std::string>>);

TEST(Views, ColumnIndexesAndIteratesWithoutCopying) {
  const std::vector<std::string> storage = {"a", "bb", "ccc"};
  const void* rows[] = {&storage[2], &storage[0], &storage[1]};
  const ro::Column<std::string> column(rows, 3);
  ASSERT_EQ(column.size(), 3u);
  EXPECT_FALSE(column.empty());
  EXPECT_EQ(&column[0], &storage[2]);  // a view, not a copy
  EXPECT_EQ(column[1], "a");
  std::vector<std::string> seen(column.begin(), column.end());
  EXPECT_THAT(seen, ElementsAre("ccc", "a", "bb"));
  EXPECT_EQ(column.end() - column.begin(), 3);
  EXPECT_EQ(*(column.begin() + 2), "bb");
  EXPECT_EQ(column.begin()[1], "a");
  EXPECT_EQ(column.begin()->size(), 3u);
  std::vector<std::string> reversed(std::make_reverse_iterator(column.end()),
                                    std::make_reverse_iterator(column.begin()));
  EXPECT_THAT(reversed, ElementsAre("bb", "a", "ccc"));
  EXPECT_THAT(column.to_vector(), ElementsAre("ccc", "a", "bb"));
  EXPECT_TRUE(ro::Column<int>(nullptr, 0).empty());
}

TEST(Views, GroupIsAnOrderedRandomAccessViewThatKeepsItsStorage) {
  auto storage = std::make_shared<std::vector<int>>(std::vector<int>{10, 20, 30});
  std::weak_ptr<std::vector<int>> watch = storage;
  ro::Group<int> group({&(*storage)[0], &(*storage)[2]}, storage);
  storage.reset();
  ASSERT_FALSE(watch.expired());  // the group keeps the values alive
  ASSERT_EQ(group.size(), 2u);
  EXPECT_EQ(group[0], 10);
  EXPECT_EQ(group[1], 30);
  EXPECT_EQ(std::accumulate(group.begin(), group.end(), 0), 40);
  EXPECT_EQ(*std::max_element(group.begin(), group.end()), 30);
  EXPECT_THAT(group.to_vector(), ElementsAre(10, 30));

  ro::Group<int> copy = group;  // copies pointers, shares the storage
  EXPECT_EQ(&copy[1], &group[1]);
  EXPECT_TRUE(copy == group);
  group = ro::Group<int>();
  EXPECT_TRUE(group.empty());
  EXPECT_FALSE(copy == group);
  EXPECT_FALSE(watch.expired());
  copy = ro::Group<int>();
  EXPECT_TRUE(watch.expired());
}

// Probes every Column/Group access path inside a real RPC.
struct Probe {
  std::vector<std::string> run(ro::Column<ro::Group<int>> groups, ro::Column<int> roots) {
    std::vector<std::string> out;
    std::size_t i = 0;
    for (const ro::Group<int>& g : groups) {
      std::string s = std::to_string(roots[i++]) + ":";
      for (std::size_t k = 0; k < g.size(); ++k) s += " " + std::to_string(g[k]);
      s += " |";
      for (auto it = g.end(); it != g.begin();) s += " " + std::to_string(*--it);
      out.push_back(s);
    }
    return out;
  }
};

TEST(Views, GroupsArriveInOrdinalOrderInsideRpcs) {
  ro::Module<Split> split;
  ro::Module<Double> dbl = ro::Module<Double>().batch_size(3);
  ro::Module<Probe> probe = ro::Module<Probe>().batch_size(2);
  auto program = ro::compile(
      [&](ro::Port<int> x) { return probe(ro::F::reduce(dbl(ro::F::expand(split(x)))), x); });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({3, 0, 2});
  EXPECT_THAT(values(r.outputs), ElementsAre("3: 0 2 4 | 4 2 0", "0: |", "2: 0 2 | 2 0"));
}

TEST(Views, ReducedGroupOutputsOutliveTheExecutor) {
  ro::Module<Split> split;
  ro::Module<ToText> text = ro::Module<ToText>().batch_size(4);
  auto program =
      ro::compile([&](ro::Port<int> x) { return ro::F::reduce(text(ro::F::expand(split(x)))); });
  std::vector<ro::Output<ro::Group<std::string>>> outputs;
  {
    ro::testing::SyncExecutor ex(program);
    outputs = ex.run({2, 0, 5}).outputs;
  }
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_THAT(outputs[0].value().to_vector(), ElementsAre("0", "1"));
  EXPECT_TRUE(outputs[1].value().empty());
  const ro::Group<std::string>& five = outputs[2].value();
  ASSERT_EQ(five.size(), 5u);
  EXPECT_EQ(five[4], "4");
  EXPECT_EQ(std::string(five.begin()[3]), "3");
}

}  // namespace
