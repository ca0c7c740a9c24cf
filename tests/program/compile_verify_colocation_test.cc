// The co-location check of the verify phase (src/program/compile_verify_colocation.cc): the
// Modules of one colocate group must agree on every option of their shared pool; the options
// each Call keeps as its own may differ.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "support/compiler_testing.h"
#include "support/udfs.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

#include "program/plan.h"

namespace {

namespace ro = rayorch;
using compiler_testing::compile_error;
using test_udfs::AddConst;
using test_udfs::Double;
using ::testing::AllOf;
using ::testing::HasSubstr;

struct PoolOptionCase {
  std::string option;
  std::function<void(ro::Module<AddConst>&)> configure;
  std::string values;  // "(lead's and other's)"
};

TEST(CompileColocation, MembersThatDisagreeOnAPoolOptionNameBothModulesAndTheOption) {
  const std::vector<PoolOptionCase> cases = {
      {"replicas", [](auto& m) { m.replicas(3); }, "(1 and 3)"},
      {"replicas", [](auto& m) { m.auto_replicas(0, 2); }, "(1 and auto)"},
      {"cpus", [](auto& m) { m.cpus(2); }, "(1 and 2)"},
      {"gpus", [](auto& m) { m.gpus(0.5); }, "(0 and 0.5)"},
      {"resources", [](auto& m) { m.resources("tpu", 1); }, "({} and {\"tpu\": 1})"},
      {"timeout", [](auto& m) { m.timeout(std::chrono::milliseconds(50)); }, "(0 ms and 50 ms)"},
      {"batch_wait", [](auto& m) { m.batch_wait(std::chrono::milliseconds(5)); },
       "(0 ms and 5 ms)"},
      {"reservation", [](auto& m) { m.reservation(ro::Reservation::parent_bound); },
       "(elastic and parent_bound)"},
  };
  for (const PoolOptionCase& c : cases) {
    ro::Module<Double> dbl;
    ro::Module<AddConst> add;
    dbl.colocate("page");
    add.colocate("page");
    c.configure(add);
    EXPECT_THAT(
        compile_error([&] { ro::compile([&](ro::Port<int> x) { return add(dbl(x), 1); }); }),
        AllOf(HasSubstr("Module<Double> and Module<AddConst> are co-located "
                        "(colocate=\"page\") but differ in " +
                        c.option + " " + c.values),
              HasSubstr("set " + c.option + " equal on both")))
        << c.option;
  }
}

TEST(CompileColocation, EachCallKeepsItsOwnBatchSizeRecoveryAndReplays) {
  ro::Module<Double> dbl = ro::Module<Double>().batch_size(4).colocate("page");
  ro::Module<AddConst> add = ro::Module<AddConst>()
                                 .batch_size(16)
                                 .recovery(ro::RecoveryPolicy::isolate_tail())
                                 .infra_retries(3)
                                 .colocate("page");
  auto program = ro::compile([&](ro::Port<int> x) { return add(dbl(x), 1); });
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 1u);
  ASSERT_EQ(plan.calls.size(), 2u);
  EXPECT_EQ(plan.calls[0].batch_size, 4);
  EXPECT_EQ(plan.calls[1].batch_size, 16);
  EXPECT_EQ(plan.calls[0].infra_retries, 1);
  EXPECT_EQ(plan.calls[1].infra_retries, 3);
  EXPECT_EQ(plan.calls[0].recovery, ro::RecoveryPolicy::abort());
  EXPECT_EQ(plan.calls[1].recovery, ro::RecoveryPolicy::isolate_tail());
}

TEST(CompileColocation, GroupsApartDoNotShareAPool) {
  ro::Module<Double> a = ro::Module<Double>().colocate("one");
  ro::Module<Double> b = ro::Module<Double>().colocate("two").replicas(4);
  ro::Module<AddConst> c = ro::Module<AddConst>().colocate("one");
  auto program = ro::compile([&](ro::Port<int> x) { return c(b(a(x)), 2); });
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 2u);
  EXPECT_EQ(plan.pools[0].name, "Double/0+AddConst");
  EXPECT_EQ(plan.pools[1].name, "Double/1");
  EXPECT_EQ(plan.calls[0].pool, 0);
  EXPECT_EQ(plan.calls[1].pool, 1);
  EXPECT_EQ(plan.calls[2].pool, 0);
}

}  // namespace
