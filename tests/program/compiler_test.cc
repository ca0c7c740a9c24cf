// What the compiler takes from Modules (DESIGN 3.3 and 4): pools follow Module identity,
// static arguments are recorded in the plan and passed on every RPC, and Module options are
// snapshotted at compile time.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/compiler_testing.h"
#include "support/output_values.h"
#include "support/udfs.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

#include "program/plan.h"

namespace {

namespace ro = rayorch;
using compiler_testing::PdfToMarkdown;
using output_values::values;
using test_udfs::Double;
using test_udfs::RecordingDouble;
using test_udfs::SharedLog;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------
// Pools follow Module identity.
// ---------------------------------------------------------------------------------------

std::size_t construction_count(const std::shared_ptr<RecordingDouble::Log>& log) {
  return log->constructions.entries().size();
}

TEST(Pools, OneModuleInTwoCallsSharesOnePool) {
  auto log = std::make_shared<RecordingDouble::Log>();
  ro::Module<RecordingDouble> dbl(log);
  auto program = ro::compile([&](ro::Port<int> x) { return dbl(dbl(x)); });
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 1u);
  EXPECT_EQ(plan.pools[0].name, "RecordingDouble");
  EXPECT_THAT(plan.pools[0].calls, ElementsAre(0, 1));
  ASSERT_EQ(plan.calls.size(), 2u);
  EXPECT_EQ(plan.calls[0].name, "RecordingDouble#0");
  EXPECT_EQ(plan.calls[1].name, "RecordingDouble#1");
  EXPECT_EQ(plan.calls[0].pool, 0);
  EXPECT_EQ(plan.calls[1].pool, 0);

  ro::testing::SyncExecutor ex(program);
  EXPECT_EQ(construction_count(log), 1u);  // one pool, one actor
  EXPECT_EQ(values(ex.run({1, 2}).outputs), (std::vector<int>{4, 8}));
}

TEST(Pools, DistinctModulesWithEqualOptionsGetTwoPools) {
  auto log = std::make_shared<RecordingDouble::Log>();
  ro::Module<RecordingDouble> first = ro::Module<RecordingDouble>(log).batch_size(2);
  ro::Module<RecordingDouble> second = ro::Module<RecordingDouble>(log).batch_size(2);
  auto program = ro::compile([&](ro::Port<int> x) { return second(first(x)); });
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 2u);
  EXPECT_EQ(plan.pools[0].name, "RecordingDouble/0");
  EXPECT_EQ(plan.pools[1].name, "RecordingDouble/1");
  EXPECT_EQ(plan.calls[0].pool, 0);
  EXPECT_EQ(plan.calls[1].pool, 1);
  EXPECT_THAT(plan.pools[1].calls, ElementsAre(1));

  ro::testing::SyncExecutor ex(program);
  EXPECT_EQ(construction_count(log), 2u);
}

TEST(Pools, ACopiedModuleIsANewPoolAMovedOneIsNot) {
  ro::Module<Double> original = ro::Module<Double>().batch_size(3).replicas(2);
  ro::Module<Double> copy = original;
  EXPECT_EQ(copy.options().batch_size, 3);
  EXPECT_EQ(copy.options().replicas, 2);
  auto copied = ro::compile([&](ro::Port<int> x) { return copy(original(x)); });
  ASSERT_EQ(copied.plan()->pools.size(), 2u);
  EXPECT_EQ(copied.plan()->pools[1].options.batch_size, 3);
  EXPECT_NE(copied.plan()->calls[0].pool, copied.plan()->calls[1].pool);

  auto moved = ro::compile([&](ro::Port<int> x) {
    auto y = original(x);
    ro::Module<Double> same = std::move(original);
    return same(y);
  });
  ASSERT_EQ(moved.plan()->pools.size(), 1u);
  EXPECT_THAT(moved.plan()->pools[0].calls, ElementsAre(0, 1));
}

TEST(Pools, TemporaryModulesNeverShareAPool) {
  // A temporary Module dies at the end of its statement; the next one may be allocated at
  // the same address and must still be a distinct Module with its own options.
  // All three read the source, so every Grain is READY at once and batches fill up.
  auto program = ro::compile([](ro::Port<int> x) {
    auto a = ro::Module<Double>()(x);
    auto b = ro::Module<Double>().batch_size(4)(x);
    auto c = ro::Module<Double>().batch_size(2)(x);
    return std::make_tuple(a, b, c);
  });
  const auto& plan = *program.plan();
  ASSERT_EQ(plan.pools.size(), 3u);
  EXPECT_EQ(plan.calls[0].batch_size, 1);
  EXPECT_EQ(plan.calls[1].batch_size, 4);
  EXPECT_EQ(plan.calls[2].batch_size, 2);
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({1, 2, 3, 4, 5});
  const std::vector<int> doubled = {2, 4, 6, 8, 10};
  EXPECT_EQ(values(std::get<0>(r.outputs)), doubled);
  EXPECT_EQ(values(std::get<1>(r.outputs)), doubled);
  EXPECT_EQ(values(std::get<2>(r.outputs)), doubled);
  std::map<std::string, std::size_t> largest;
  for (const auto& rpc : ex.rpcs())
    largest[rpc.call] = std::max(largest[rpc.call], rpc.grains.size());
  EXPECT_EQ(largest["Double#0"], 1u);
  EXPECT_EQ(largest["Double#1"], 4u);
  EXPECT_EQ(largest["Double#2"], 2u);
}

// ---------------------------------------------------------------------------------------
// Static arguments.
// ---------------------------------------------------------------------------------------

struct Opaque {
  int bias = 0;
};

// x, statics (k, label, opaque) -> x + k + opaque.bias; logs "label:k:rows" per RPC.
struct Shift {
  explicit Shift(std::shared_ptr<SharedLog<std::string>> rpc_log) : log(std::move(rpc_log)) {}
  std::vector<int> run(ro::Column<int> x, int k, const std::string& label, Opaque opaque) {
    log->add(label + ":" + std::to_string(k) + ":" + std::to_string(x.size()));
    std::vector<int> out;
    for (int v : x) out.push_back(v + k + opaque.bias);
    return out;
  }
  std::shared_ptr<SharedLog<std::string>> log;
};

TEST(StaticArguments, RecordedInThePlanAndPassedOnEveryRpc) {
  auto log = std::make_shared<SharedLog<std::string>>();
  ro::Module<Shift> shift = ro::Module<Shift>(log).batch_size(2);
  int k = 1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto y = shift(x, k, "first", Opaque{100});
    return shift(y, 10, std::string("second"), Opaque{1000});
  });
  k = 50;  // captured by value when traced

  const auto& plan = *program.plan();
  ASSERT_EQ(plan.calls.size(), 2u);
  ASSERT_EQ(plan.calls[0].static_args.size(), 3u);
  EXPECT_EQ(plan.calls[0].static_args[0], "1");
  EXPECT_EQ(plan.calls[0].static_args[1], "first");
  // Values without a formatter print as their type name.
  EXPECT_THAT(plan.calls[0].static_args[2], AllOf(::testing::StartsWith("<"), HasSubstr("Opaque")));
  EXPECT_EQ(plan.calls[1].static_args[0], "10");
  EXPECT_EQ(plan.calls[1].static_args[1], "second");
  EXPECT_THAT(program.explain(), AllOf(HasSubstr("worker-output by Shift#0 static(1, first, <"),
                                       HasSubstr("worker-output by Shift#1 static(10, second, <")));

  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({1, 2, 3, 4, 5});
  EXPECT_EQ(values(r.outputs), (std::vector<int>{1112, 1113, 1114, 1115, 1116}));
  // SyncExecutor calls the UDF on the test thread, in the order of rpcs().
  const auto entries = log->entries();
  ASSERT_EQ(entries.size(), ex.rpcs().size());
  ASSERT_EQ(entries.size(), 6u);  // 3 RPCs of at most 2 Grains per Call
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& rpc = ex.rpcs()[i];
    const std::string expected_prefix = rpc.call == "Shift#0" ? "first:1:" : "second:10:";
    EXPECT_EQ(entries[i], expected_prefix + std::to_string(rpc.grains.size())) << i;
  }
}

// ---------------------------------------------------------------------------------------
// A compiled program is a snapshot.
// ---------------------------------------------------------------------------------------

std::vector<std::size_t> rpc_sizes(const std::vector<ro::RpcRecord>& rpcs) {
  std::vector<std::size_t> out;
  for (const auto& r : rpcs) out.push_back(r.grains.size());
  return out;
}

TEST(Snapshot, LaterModuleChangesDoNotAffectACompiledProgram) {
  auto log = std::make_shared<RecordingDouble::Log>();
  ro::Module<RecordingDouble> dbl = ro::Module<RecordingDouble>(log).batch_size(2);
  auto pipeline = [&](ro::Port<int> x) { return dbl(x); };
  auto before = ro::compile(pipeline);
  dbl.batch_size(4).replicas(3).recovery(ro::RecoveryPolicy::retry_batch(2));

  const auto& plan = *before.plan();
  EXPECT_EQ(plan.pools[0].options.batch_size, 2);
  EXPECT_EQ(plan.pools[0].options.replicas, 1);
  EXPECT_EQ(plan.calls[0].batch_size, 2);
  EXPECT_EQ(plan.calls[0].recovery, ro::RecoveryPolicy::abort());

  const std::vector<int> input = {1, 2, 3, 4, 5, 6, 7, 8};
  {
    ro::testing::SyncExecutor ex(before);
    EXPECT_EQ(values(ex.run(input).outputs), (std::vector<int>{2, 4, 6, 8, 10, 12, 14, 16}));
    EXPECT_THAT(rpc_sizes(ex.rpcs()), ElementsAre(2, 2, 2, 2));
  }

  auto after = ro::compile(pipeline);
  EXPECT_EQ(after.plan()->pools[0].options.batch_size, 4);
  EXPECT_EQ(after.plan()->pools[0].options.replicas, 3);
  EXPECT_EQ(after.plan()->calls[0].recovery, ro::RecoveryPolicy::retry_batch(2));
  {
    ro::testing::SyncExecutor ex(after);
    EXPECT_EQ(values(ex.run(input).outputs), (std::vector<int>{2, 4, 6, 8, 10, 12, 14, 16}));
    EXPECT_THAT(rpc_sizes(ex.rpcs()), ElementsAre(4, 4));
  }
  {
    // The first program is still unchanged after the recompile.
    ro::testing::SyncExecutor ex(before);
    ex.run(input);
    EXPECT_THAT(rpc_sizes(ex.rpcs()), ElementsAre(2, 2, 2, 2));
  }
}

TEST(Snapshot, ProgramOutlivesThePipelineAndItsModules) {
  std::optional<ro::Compiled<PdfToMarkdown>> program;
  {
    PdfToMarkdown pipeline;
    program.emplace(ro::compile(pipeline));
    pipeline.ocr.batch_size(1);
  }
  EXPECT_EQ(program->plan()->calls[1].batch_size, 32);
  ro::testing::SyncExecutor ex(*program);
  EXPECT_EQ(values(ex.run({"p;q"}).outputs), (std::vector<std::string>{"p;q => P Q"}));
}

}  // namespace
