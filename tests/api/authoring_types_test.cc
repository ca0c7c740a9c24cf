// The authoring API (DESIGN 3.1-3.3), its types: type deduction of Module calls and
// structural operators, multi-output UDFs, Row<R> results with per-row failures, and access
// to an Output that is not PRESENT.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
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
using test_udfs::IsEven;
using test_udfs::Split;
using test_udfs::SplitPair;
using test_udfs::SquareAndText;
using test_udfs::Sum;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// n -> n when n >= 0; a RecordFailure otherwise.
struct CheckedIdentity {
  std::vector<ro::Row<int>> run(ro::Column<int> x) {
    std::vector<ro::Row<int>> out;
    for (int v : x) {
      if (v < 0) {
        out.push_back(ro::RecordFailure{"negative input " + std::to_string(v)});
      } else {
        out.push_back(v);
      }
    }
    return out;
  }
};

// Two outputs, the second made of Rows.
struct HalveOrFail {
  std::tuple<std::vector<int>, std::vector<ro::Row<int>>> run(ro::Column<int> x) {
    std::vector<int> echo;
    std::vector<ro::Row<int>> halves;
    for (int v : x) {
      echo.push_back(v);
      if (v % 2 == 0) {
        halves.push_back(v / 2);
      } else {
        halves.push_back(ro::RecordFailure{"odd"});
      }
    }
    return {std::move(echo), std::move(halves)};
  }
};

TEST(TypeDeduction, ModuleCallsAndOperatorsYieldTypedPorts) {
  ro::Module<Split> split;
  ro::Module<Double> dbl;
  ro::Module<SquareAndText> two;
  ro::Module<CheckedIdentity> checked;
  ro::Module<SplitPair> split_pair;
  ro::Module<IsEven> even;
  ro::Module<Sum> sum;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto lists = split(x);
    static_assert(std::is_same_v<decltype(lists), ro::Port<std::vector<int>>>);
    auto [square, text] = two(x);
    static_assert(std::is_same_v<decltype(square), ro::Port<int>>);
    static_assert(std::is_same_v<decltype(text), ro::Port<std::string>>);
    // A Row<R> element type is a Port<R>: failures are outcomes, not values.
    static_assert(std::is_same_v<decltype(checked(x)), ro::Port<int>>);
    static_assert(std::is_same_v<decltype(even(x)), ro::Port<bool>>);

    auto child = ro::F::expand(lists);
    static_assert(std::is_same_v<decltype(child), ro::Port<int>>);
    auto [numbers, names] = split_pair(x);
    auto [number, name] = ro::F::expand_aligned(numbers, names);
    (void)name;
    static_assert(std::is_same_v<decltype(name), ro::Port<std::string>>);
    auto group = ro::F::reduce(child);
    static_assert(std::is_same_v<decltype(group), ro::Port<ro::Group<int>>>);
    auto [g_number, g_name] = ro::F::reduce_aligned(ro::F::members(number), number, name);
    static_assert(std::is_same_v<decltype(g_name), ro::Port<ro::Group<std::string>>>);
    (void)g_number;
    (void)g_name;
    static_assert(std::is_same_v<decltype(ro::F::filter(x, even(x))), ro::Port<int>>);
    static_assert(std::is_same_v<decltype(ro::F::broadcast(text, child)), ro::Port<std::string>>);
    return std::make_tuple(sum(group), dbl(square));
  });
  using Program = decltype(program);
  static_assert(std::is_same_v<Program::inputs, std::tuple<int>>);
  static_assert(std::is_same_v<Program::output, ro::MultiOutput<int, int>>);
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({3});
  static_assert(
      std::is_same_v<decltype(r.outputs),
                     std::tuple<std::vector<ro::Output<int>>, std::vector<ro::Output<int>>>>);
  EXPECT_EQ(values(std::get<0>(r.outputs)), (std::vector<int>{0 + 1 + 2}));
  EXPECT_EQ(values(std::get<1>(r.outputs)), (std::vector<int>{18}));
}

TEST(TypeDeduction, MultiOutputUdfWithStructuredBindings) {
  ro::Module<SquareAndText> two;
  ro::Module<Double> dbl;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [square, text] = two(x);
    return std::make_tuple(text, dbl(square), square);
  });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({-2, 0, 7});
  auto& [texts, doubled, squares] = r.outputs;
  EXPECT_EQ(values(texts), (std::vector<std::string>{"-2", "0", "7"}));
  EXPECT_EQ(values(doubled), (std::vector<int>{8, 0, 98}));
  EXPECT_EQ(values(squares), (std::vector<int>{4, 0, 49}));
  // One RPC of the two-output UDF feeds both of its outputs.
  EXPECT_EQ(std::count_if(ex.rpcs().begin(), ex.rpcs().end(),
                          [](const ro::RpcRecord& rpc) { return rpc.call == "SquareAndText#0"; }),
            3);
}

TEST(TypeDeduction, RowResultsCarryPerRowFailures) {
  ro::Module<CheckedIdentity> checked = ro::Module<CheckedIdentity>().batch_size(4);
  ro::Module<Double> dbl;
  auto program = ro::compile([&](ro::Port<int> x) { return dbl(checked(x)); });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({1, -3, 5});
  ASSERT_EQ(r.outputs.size(), 3u);
  EXPECT_EQ(r.outputs[0].value(), 2);
  EXPECT_EQ(r.outputs[2].value(), 10);
  ASSERT_FALSE(r.outputs[1].ok());
  // The failed Item suppresses the downstream Double and its cause travels along.
  EXPECT_EQ(r.outputs[1].issue().outcome, ro::Outcome::suppressed);
  EXPECT_THAT(r.outputs[1].issue().cause, HasSubstr("negative input -3"));
  // The failing row did not reach Double.
  std::vector<std::string> doubled;
  for (const auto& rpc : ex.rpcs()) {
    if (rpc.call == "Double#1") doubled.insert(doubled.end(), rpc.grains.begin(), rpc.grains.end());
  }
  EXPECT_THAT(doubled, ElementsAre("0", "2"));
}

TEST(TypeDeduction, RowInOneOutputOfAMultiOutputUdf) {
  ro::Module<HalveOrFail> halve = ro::Module<HalveOrFail>().batch_size(3);
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [echo, half] = halve(x);
    return std::make_tuple(echo, half);
  });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({4, 3, 10});
  const auto& [echo, half] = r.outputs;
  EXPECT_EQ(half[0].value(), 2);
  EXPECT_EQ(half[2].value(), 5);
  ASSERT_FALSE(half[1].ok());
  EXPECT_EQ(half[1].issue().outcome, ro::Outcome::failed);
  EXPECT_THAT(half[1].issue().cause, HasSubstr("odd"));
  // A RecordFailure fails every output of its Grain, not only the Row-typed one.
  EXPECT_TRUE(echo[0].ok());
  ASSERT_FALSE(echo[1].ok());
  EXPECT_EQ(echo[1].issue().outcome, ro::Outcome::failed);
}

TEST(Outputs, ValueOfANonPresentOutputThrowsLogicError) {
  ro::Module<IsEven> even;
  ro::Module<CheckedIdentity> checked;
  auto program = ro::compile([&](ro::Port<int> x) { return ro::F::filter(checked(x), even(x)); });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({2, 3, -4});
  ASSERT_EQ(r.outputs.size(), 3u);

  EXPECT_EQ(r.outputs[0].value(), 2);
  EXPECT_THROW((void)r.outputs[0].issue(), std::logic_error);

  ASSERT_FALSE(r.outputs[1].ok());
  EXPECT_EQ(r.outputs[1].issue().outcome, ro::Outcome::dropped);
  try {
    (void)r.outputs[1].value();
    ADD_FAILURE() << "value() of a dropped output must throw";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("Output::value()"), HasSubstr("dropped"),
                                HasSubstr("check ok() first")));
  }

  ASSERT_FALSE(r.outputs[2].ok());
  EXPECT_EQ(r.outputs[2].issue().outcome, ro::Outcome::failed);
  try {
    (void)r.outputs[2].take();
    ADD_FAILURE() << "take() of a failed output must throw";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("failed"), HasSubstr("negative input -4")));
  }
  EXPECT_EQ(r.outputs[0].take(), 2);
}

}  // namespace
