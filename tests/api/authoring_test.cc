// The authoring API (DESIGN 3.1-3.3): type deduction of Module calls and structural
// operators, multi-output UDFs, Row<R> results, the Column and Group views, Output access,
// constructor-argument capture, pipeline classes and plain functions as Modules.
#include <algorithm>
#include <iterator>
#include <memory>
#include <numeric>
#include <ranges>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "support/udfs.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "program/plan.h"

namespace {

namespace ro = rayorch;
using test_udfs::Add;
using test_udfs::Double;
using test_udfs::IsEven;
using test_udfs::Join;
using test_udfs::SharedLog;
using test_udfs::Split;
using test_udfs::SplitPair;
using test_udfs::SquareAndText;
using test_udfs::Sum;
using test_udfs::ToText;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <class T>
std::vector<T> values(const std::vector<ro::Output<T>>& outputs) {
  std::vector<T> out;
  for (const auto& o : outputs) out.push_back(o.value());
  return out;
}

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

// ---------------------------------------------------------------------------------------
// Column and Group views.
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// Output access.
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// Modules, pipelines and runs.
// ---------------------------------------------------------------------------------------

TEST(Modules, ConstructorArgumentsAreCapturedByValue) {
  std::string separator = "+";
  ro::Module<Join> join(separator);
  separator = "changed";
  ro::Module<Split> split;
  ro::Module<ToText> text;
  auto program = ro::compile(
      [&](ro::Port<int> x) { return join(ro::F::reduce(text(ro::F::expand(split(x))))); });
  ro::testing::SyncExecutor ex(program);
  EXPECT_THAT(values(ex.run({3, 1}).outputs), ElementsAre("0+1+2", "0"));
}

TEST(Modules, OptionSettersChainOnTemporariesAndLvalues) {
  ro::Module<Double> m = ro::Module<Double>()
                             .replicas(3)
                             .batch_size(8)
                             .cpus(2)
                             .gpus(0.5)
                             .resources("ssd", 1)
                             .recovery(ro::RecoveryPolicy::retry_tail(2))
                             .infra_retries(4)
                             .timeout(std::chrono::milliseconds(250))
                             .reservation(ro::Reservation::parent_bound);
  const ro::ModuleOptions& o = m.options();
  EXPECT_EQ(o.replicas, 3);
  EXPECT_EQ(o.batch_size, 8);
  EXPECT_EQ(o.cpus, 2.0);
  EXPECT_EQ(o.gpus, 0.5);
  EXPECT_EQ(o.resources.at("ssd"), 1.0);
  EXPECT_EQ(o.recovery, ro::RecoveryPolicy::retry_tail(2));
  EXPECT_EQ(o.infra_retries, 4);
  EXPECT_EQ(o.timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(o.reservation, ro::Reservation::parent_bound);
  m.batch_size(2).replicas(1);
  EXPECT_EQ(m.options().batch_size, 2);
  EXPECT_EQ(m.options().replicas, 1);
  // Defaults.
  const ro::ModuleOptions d = ro::Module<Double>().options();
  EXPECT_EQ(d.replicas, 1);
  EXPECT_EQ(d.batch_size, 1);
  EXPECT_EQ(d.infra_retries, 1);
  EXPECT_EQ(d.recovery, ro::RecoveryPolicy::abort());
}

// The shape of DESIGN 3.3: Modules as members, forward() on Ports, several sources.
struct Weighted : ro::Pipeline {
  ro::Module<Split> split;
  ro::Module<Add> add = ro::Module<Add>().batch_size(4);
  ro::Module<Sum> sum;
  ro::Port<int> forward(ro::Port<int> n, ro::Port<int> weight) {
    auto child = ro::F::expand(split(n));
    return sum(ro::F::reduce(add(child, ro::F::broadcast(weight, child))));
  }
};

TEST(Pipelines, ClassWithForwardAndSeveralSources) {
  Weighted pipeline;
  auto program = ro::compile(pipeline);
  static_assert(std::is_same_v<decltype(program), ro::Compiled<Weighted>>);
  static_assert(std::is_same_v<decltype(program)::inputs, std::tuple<int, int>>);
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({3, 0, 2}, {100, 5, 10});
  // n children 0..n-1, each plus the row's weight.
  EXPECT_THAT(values(r.outputs), ElementsAre(303, 0, 21));
  EXPECT_THROW(ex.run({1, 2}, {1}), std::invalid_argument);
}

// Every Module member default-constructs, so the struct is an aggregate built with braces.
struct Doubler : ro::Pipeline {
  ro::Module<Double> dbl;
  ro::Module<Join> join;  // a UDF with a defaulted constructor argument
  ro::Module<Split> split = ro::Module<Split>().batch_size(2);
  ro::Module<ToText> text;
  ro::Port<std::string> forward(ro::Port<int> n) {
    return join(ro::F::reduce(text(dbl(ro::F::expand(split(n))))));
  }
};

TEST(Pipelines, StructBuiltWithBracesCompilesAsATemporaryOrAnLvalue) {
  ro::Compiled<Doubler> from_temporary = ro::compile(Doubler{});
  Doubler pipeline;
  ro::Compiled<Doubler> from_lvalue = ro::compile(pipeline);
  static_assert(std::is_same_v<ro::Compiled<Doubler>::inputs, std::tuple<int>>);
  static_assert(std::is_same_v<ro::Compiled<Doubler>::output, std::string>);
  EXPECT_EQ(from_temporary.explain(), from_lvalue.explain());
  // The temporary's Modules are gone; the compiled program holds what it needs.
  ro::testing::SyncExecutor ex(from_temporary);
  EXPECT_THAT(values(ex.run({3, 0, 1}).outputs), ElementsAre("0,2,4", "", "0"));
  EXPECT_EQ(ex.rpcs().front().grains, (std::vector<std::string>{"0", "1"}));  // batch_size(2)
}

TEST(Modules, NameReplacesTheUdfTypeNameInCallsAndPools) {
  ro::Module<Double> first = ro::Module<Double>().name("scale");
  ro::Module<Double> second;
  EXPECT_EQ(first.name(), "scale");
  EXPECT_EQ(second.name(), "Double");
  ro::Module<Double> copy = first;  // a copy keeps the name (and is a pool of its own)
  EXPECT_EQ(copy.name(), "scale");
  auto program = ro::compile([&](ro::Port<int> x) { return second(copy(first(x))); });
  EXPECT_THAT(program.explain(),
              AllOf(HasSubstr("worker-output by scale#0"), HasSubstr("worker-output by scale#1"),
                    HasSubstr("worker-output by Double#2")));
  ASSERT_EQ(program.plan()->pools.size(), 3u);
  EXPECT_EQ(program.plan()->pools[0].name, "scale/0");
  EXPECT_EQ(program.plan()->pools[1].name, "scale/1");
  EXPECT_EQ(program.plan()->pools[2].name, "Double");
  ro::testing::SyncExecutor ex(program);
  EXPECT_THAT(values(ex.run({1, 5}).outputs), ElementsAre(8, 40));
}

// ---------------------------------------------------------------------------------------
// Plain functions as Modules.
// ---------------------------------------------------------------------------------------

int triple(int x) {
  return 3 * x;
}

TEST(Functions, PerRowFunctionsComputeOneValuePerRow) {
  auto square = ro::function([](const int& x) { return x * x; });
  auto thrice = ro::function(triple);  // a plain function pointer
  auto sum = ro::function([](int a, const int& b) { return a + b; });
  auto show = ro::function([](const int& x) { return "#" + std::to_string(x); });
  auto program = ro::compile([&](ro::Port<int> x) {
    auto sq = square(x);
    static_assert(std::is_same_v<decltype(sq), ro::Port<int>>);
    static_assert(std::is_same_v<decltype(show(x)), ro::Port<std::string>>);
    return std::make_tuple(sum(sq, thrice(x)), show(x));
  });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({-2, 0, 5});
  EXPECT_THAT(values(std::get<0>(r.outputs)), ElementsAre(4 - 6, 0, 25 + 15));
  EXPECT_THAT(values(std::get<1>(r.outputs)), ElementsAre("#-2", "#0", "#5"));
  EXPECT_THAT(program.explain(), AllOf(HasSubstr("worker-output by function#0"),
                                       HasSubstr("worker-output by function#2")));
}

TEST(Functions, BoolFunctionIsAFilterMask) {
  auto even = ro::function([](const int& x) { return x % 2 == 0; }).name("even");
  ro::Module<Double> dbl;
  auto program = ro::compile([&](ro::Port<int> x) { return dbl(ro::F::filter(x, even(x))); });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({1, 2, 3, 4});
  ASSERT_EQ(r.outputs.size(), 4u);
  EXPECT_EQ(r.outputs[0].issue().outcome, ro::Outcome::dropped);
  EXPECT_EQ(r.outputs[1].value(), 4);
  EXPECT_EQ(r.outputs[2].issue().outcome, ro::Outcome::dropped);
  EXPECT_EQ(r.outputs[3].value(), 8);
  EXPECT_THAT(program.explain(), HasSubstr("worker-output by even#0"));
  // Dropped rows never reach Double.
  std::vector<std::string> doubled;
  for (const auto& rpc : ex.rpcs()) {
    if (rpc.call == "Double#1") doubled.insert(doubled.end(), rpc.grains.begin(), rpc.grains.end());
  }
  EXPECT_THAT(doubled, ElementsAre("1", "3"));
}

TEST(Functions, RowResultsFailSingleRowsAndOptionsApply) {
  auto checked = ro::function([](const int& x) -> ro::Row<int> {
                   if (x < 0) return ro::RecordFailure{"negative " + std::to_string(x)};
                   return x + 1;
                 }).batch_size(3);
  EXPECT_EQ(checked.options().batch_size, 3);
  auto program = ro::compile([&](ro::Port<int> x) { return checked(x); });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({1, -4, 7, 9});
  EXPECT_EQ(r.outputs[0].value(), 2);
  ASSERT_FALSE(r.outputs[1].ok());
  EXPECT_EQ(r.outputs[1].issue(), (ro::OutputIssue{ro::Outcome::failed, "negative -4"}));
  EXPECT_EQ(r.outputs[2].value(), 8);
  EXPECT_EQ(r.outputs[3].value(), 10);
  std::vector<std::size_t> sizes;
  for (const auto& rpc : ex.rpcs()) sizes.push_back(rpc.grains.size());
  EXPECT_THAT(sizes, ElementsAre(3u, 1u));  // one RPC holds up to batch_size rows
}

TEST(Functions, PerBatchFunctionSeesWholeColumnsAndStaticArguments) {
  auto log = std::make_shared<SharedLog<std::size_t>>();
  auto offset = ro::batch_function([log](ro::Column<int> x, int k) {
                  log->add(x.size());
                  std::vector<int> out;
                  for (int v : x) out.push_back(v + k);
                  return out;
                }).batch_size(2);
  auto split = ro::batch_function([](ro::Column<int> x) {
                 std::tuple<std::vector<int>, std::vector<std::string>> out;
                 for (int v : x) {
                   std::get<0>(out).push_back(-v);
                   std::get<1>(out).push_back(std::to_string(v));
                 }
                 return out;
               }).batch_size(3);  // every row reaches `offset` at once
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [negated, text] = split(x);
    return std::make_tuple(offset(negated, 100), text);
  });
  EXPECT_THAT(program.explain(), HasSubstr("worker-output by batch_function#1 static(100)"));
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({1, 2, 3});
  EXPECT_THAT(values(std::get<0>(r.outputs)), ElementsAre(99, 98, 97));
  EXPECT_THAT(values(std::get<1>(r.outputs)), ElementsAre("1", "2", "3"));
  EXPECT_THAT(log->entries(), ElementsAre(2u, 1u));
}

// Spelled function types, for pipeline struct members.
struct EvenSum : ro::Pipeline {
  ro::Function<bool(const int&)> even{[](const int& x) { return x % 2 == 0; }};
  ro::BatchFunction<std::vector<int>(ro::Column<ro::Group<int>>)> total{
      [](ro::Column<ro::Group<int>> groups) {
        std::vector<int> out;
        for (const auto& g : groups) out.push_back(std::accumulate(g.begin(), g.end(), 0));
        return out;
      }};
  ro::Module<Split> split;
  ro::Port<int> forward(ro::Port<int> n) {
    auto child = ro::F::expand(split(n));
    return total(ro::F::reduce(ro::F::filter(child, even(child))));
  }
};

TEST(Functions, SpelledFunctionTypesAreStructMembers) {
  auto program = ro::compile(EvenSum{});
  ro::testing::SyncExecutor ex(program);
  // 0..n-1, even ones summed.
  EXPECT_THAT(values(ex.run({5, 0, 7}).outputs), ElementsAre(0 + 2 + 4, 0, 0 + 2 + 4 + 6));
  // Also on the local backend, with several actors copying the callable.
  EvenSum wide;
  wide.even.replicas(3).batch_size(2);
  ro::Executor local(ro::compile(wide));
  EXPECT_THAT(values(local.run(std::vector<int>{5, 0, 7}).outputs), ElementsAre(6, 0, 12));
}

TEST(Pipelines, EmptyInputGivesNoOutputs) {
  ro::Module<Double> dbl;
  auto program = ro::compile([&](ro::Port<int> x) { return dbl(x); });
  ro::testing::SyncExecutor ex(program);
  EXPECT_TRUE(ex.run(std::vector<int>{}).outputs.empty());
  EXPECT_TRUE(ex.rpcs().empty());
}

TEST(Pipelines, StreamingDeliversEveryRowOnceWithItsIndex) {
  ro::Module<Split> split;
  ro::Module<Sum> sum;
  auto program =
      ro::compile([&](ro::Port<int> x) { return sum(ro::F::reduce(ro::F::expand(split(x)))); });
  ro::testing::SyncExecutor ex(program);
  std::vector<int> got(4, -1);
  std::vector<int> deliveries(4, 0);
  ro::RunOptions options;
  options.input_batch_size = 2;
  auto r = ex.run({4, 1, 0, 3}, options, [&](std::size_t row, ro::Output<int> out) {
    ASSERT_LT(row, got.size());
    ++deliveries[row];
    got[row] = out.value();
  });
  EXPECT_TRUE(r.outputs.empty());
  EXPECT_THAT(deliveries, ElementsAre(1, 1, 1, 1));
  EXPECT_THAT(got, ElementsAre(6, 0, 0, 3));
}

}  // namespace
