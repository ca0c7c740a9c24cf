// The colocate phase (src/program/compile_colocate.cc): with CompileOptions::auto_colocate the
// compiler co-locates a Module with the one Module whose Calls alone read its outputs, when
// neither declares a group and the two agree on every pool option; never otherwise.
#include <string>
#include <tuple>

#include "support/udfs.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

#include "program/plan.h"

namespace {

namespace ro = rayorch;
using test_udfs::AddConst;
using test_udfs::Double;
using test_udfs::Split;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr ro::CompileOptions kAuto{.auto_colocate = true};

TEST(CompileColocate, IsOffByDefault) {
  ro::Module<Double> dbl;
  ro::Module<AddConst> add;
  auto program = ro::compile([&](ro::Port<int> x) { return add(dbl(x), 1); });
  EXPECT_EQ(program.plan()->pools.size(), 2u);
}

TEST(CompileColocate, AChainOfModulesThatAgreeSharesOnePool) {
  ro::Module<Double> a = ro::Module<Double>().replicas(3).batch_size(2);
  ro::Module<AddConst> b = ro::Module<AddConst>().replicas(3).batch_size(8);
  ro::Module<Double> c = ro::Module<Double>().replicas(3);
  auto program = ro::compile([&](ro::Port<int> x) { return c(b(a(x), 1)); }, kAuto);
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 1u);
  EXPECT_EQ(plan.pools[0].name, "Double/0+AddConst+Double/1");
  EXPECT_EQ(plan.pools[0].members, 3u);
  EXPECT_EQ(plan.pools[0].options.replicas, 3);
  EXPECT_TRUE(plan.pools[0].found_by_compiler);
  EXPECT_EQ(plan.calls[0].batch_size, 2);  // each Call keeps its own
  EXPECT_EQ(plan.calls[1].batch_size, 8);
  EXPECT_THAT(program.explain(), HasSubstr("co-located pool Double/0+AddConst+Double/1: "
                                           "Double#0, AddConst#1, Double#2 (found by the "
                                           "compiler)"));
}

TEST(CompileColocate, ModulesThatDisagreeOnAPoolOptionKeepTheirOwnPools) {
  ro::Module<Double> a = ro::Module<Double>().replicas(2);
  ro::Module<AddConst> b = ro::Module<AddConst>().replicas(2).cpus(2);
  ro::Module<Double> c = ro::Module<Double>().replicas(2).cpus(2);
  auto program = ro::compile([&](ro::Port<int> x) { return c(b(a(x), 1)); }, kAuto);
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 2u);  // a alone; b and c agree
  EXPECT_EQ(plan.pools[0].name, "Double/0");
  EXPECT_EQ(plan.pools[1].name, "AddConst+Double/1");
}

TEST(CompileColocate, AValueTheDriverNeedsIsNoReasonToCoLocate) {
  ro::Module<Double> dbl;
  ro::Module<AddConst> add;
  // The doubled value is also a pipeline output.
  auto both = ro::compile(
      [&](ro::Port<int> x) {
        auto d = dbl(x);
        return std::make_tuple(d, add(d, 1));
      },
      kAuto);
  EXPECT_EQ(both.plan()->pools.size(), 2u);
  // An expand reads the split lists.
  ro::Module<Split> split;
  ro::Module<Double> child;
  auto expanded = ro::compile(
      [&](ro::Port<int> n) { return ro::F::reduce(child(ro::F::expand(split(n)))); }, kAuto);
  EXPECT_EQ(expanded.plan()->pools.size(), 2u);
  EXPECT_THAT(expanded.explain(), Not(HasSubstr("co-located")));
}

TEST(CompileColocate, AValueTwoModulesReadStaysApart) {
  ro::Module<Double> dbl;
  ro::Module<AddConst> one;
  ro::Module<AddConst> two;
  auto program = ro::compile(
      [&](ro::Port<int> x) {
        auto d = dbl(x);
        return std::make_tuple(one(d, 1), two(d, 2));
      },
      kAuto);
  EXPECT_EQ(program.plan()->pools.size(), 3u);
}

TEST(CompileColocate, DeclaredGroupsAreKeptAndNotJoined) {
  ro::Module<Double> a = ro::Module<Double>().colocate("page");
  ro::Module<AddConst> b = ro::Module<AddConst>().colocate("page");
  ro::Module<Double> c;  // agrees with b, but b's group is declared
  auto program = ro::compile([&](ro::Port<int> x) { return c(b(a(x), 1)); }, kAuto);
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 2u);
  EXPECT_EQ(plan.pools[0].name, "Double/0+AddConst");
  EXPECT_FALSE(plan.pools[0].found_by_compiler);
  EXPECT_EQ(plan.pools[1].name, "Double/1");
  EXPECT_THAT(program.explain(), Not(HasSubstr("found by the compiler")));
}

}  // namespace
