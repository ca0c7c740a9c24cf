// The authoring API (DESIGN 3.1-3.3), its Modules and pipelines: constructor-argument
// capture, option setters and names, pipeline classes with several sources, plain functions
// and spelled function types as Modules, empty inputs and streaming runs.
#include <chrono>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "support/output_values.h"
#include "support/udfs.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

#include "program/plan.h"

namespace {

namespace ro = rayorch;
using output_values::values;
using test_udfs::Add;
using test_udfs::Double;
using test_udfs::Join;
using test_udfs::SharedLog;
using test_udfs::Split;
using test_udfs::Sum;
using test_udfs::ToText;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

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
