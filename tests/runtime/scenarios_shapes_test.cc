// End-to-end scenarios of the semantic runtime (DESIGN 5) through testing::SyncExecutor, on
// the shape of what it builds: nested groups keep their empty and filtered members exactly,
// and a root value broadcast 1000 Domains deep neither recurses nor materialises.
#include <pthread.h>

#include <string>
#include <vector>

#include "support/runtime_harness.h"
#include "support/runtime_scenario_checks.h"
#include "support/runtime_scenario_udfs.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

using namespace runtime_test;
using namespace runtime_test::scenario_checks;
namespace F = ro::F;

// ---- Group shape -----------------------------------------------------------------------

TEST(Scenario, NestedExpandReduceKeepsEmptyGroupsExactly) {
  const std::vector<Nested> rows = {{{}, {0, 1}}, {}, {{5}, {}, {6, 7, 8}}};
  const std::vector<std::vector<std::vector<int>>> expected = {
      {{}, {10, 11}}, {}, {{15}, {}, {16, 17, 18}}};
  for (int batch : {1, 4}) {
    for (std::size_t input_batch : {0, 1}) {
      SCOPED_TRACE("batch " + std::to_string(batch) + " input batch " +
                   std::to_string(input_batch));
      ro::Module<InnerLists> outer;
      ro::Module<ListOf> inner = ro::Module<ListOf>().batch_size(batch);
      ro::Module<AddTen> add = ro::Module<AddTen>().batch_size(batch);
      auto program = ro::compile([&](ro::Port<Nested> x) {
        auto lists = F::expand(outer(x));
        auto values = F::expand(inner(lists));
        return F::reduce(F::reduce(add(values)));
      });
      ro::testing::SyncExecutor ex(program);
      auto r = ex.run(rows, {.input_batch_size = input_batch});
      ASSERT_EQ(r.outputs.size(), 3u);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        ASSERT_TRUE(r.outputs[i].ok()) << issue_of(r.outputs[i]);
        EXPECT_EQ(plain(r.outputs[i].value()), expected[i]) << "row " << i;
      }
    }
  }
}

TEST(Scenario, FilterInsideANestedGroupKeepsTheGroupShape) {
  const std::vector<Nested> rows = {{{1, 2, 3}, {2, 4}, {5}}, {}, {{}, {7}}};
  const std::vector<std::vector<std::vector<int>>> expected = {{{1, 3}, {}, {5}}, {}, {{}, {7}}};
  ro::Module<InnerLists> outer;
  ro::Module<ListOf> inner;
  ro::Module<Ident> ident;
  ro::Module<IsOdd> odd = ro::Module<IsOdd>().batch_size(3);
  auto program = ro::compile([&](ro::Port<Nested> x) {
    auto values = ident(F::expand(inner(F::expand(outer(x)))));
    return F::reduce(F::reduce(F::filter(values, odd(values))));
  });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run(rows);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(r.outputs[i].ok()) << issue_of(r.outputs[i]);
    EXPECT_EQ(plain(r.outputs[i].value()), expected[i]) << "row " << i;
  }
}

// ---- Deep broadcast --------------------------------------------------------------------

constexpr int kDepth = 1000;

struct DeepResult {
  std::vector<std::string> outputs;
  std::string error;
  std::size_t rpcs = 0;
  std::string deepest_key;
};

void* run_deep_chain(void* arg) {
  auto* result = static_cast<DeepResult*>(arg);
  try {
    ro::Module<OneChild> one = ro::Module<OneChild>().batch_size(2);
    ro::Module<Add> add = ro::Module<Add>().batch_size(2);
    ro::Module<First> first = ro::Module<First>().batch_size(2);
    auto program = ro::compile([&](ro::Port<int> x) {
      ro::Port<int> level = x;
      for (int d = 0; d < kDepth; ++d) level = F::expand(one(level));
      ro::Port<int> v = add(level, F::broadcast(x, level));
      for (int d = 0; d < kDepth; ++d) v = first(F::reduce(v));
      return v;
    });
    ro::testing::SyncExecutor ex(program);
    auto r = ex.run({1, 2});
    for (const auto& o : r.outputs) {
      result->outputs.push_back(o.ok() ? std::to_string(o.value()) : issue_of(o));
    }
    result->rpcs = ex.rpcs().size();
    for (const auto& rpc : ex.rpcs()) {
      if (rpc.call.rfind("Add#", 0) == 0) result->deepest_key = rpc.grains.at(0);
    }
  } catch (const std::exception& e) {
    result->error = e.what();
  }
  return nullptr;
}

TEST(Scenario, BroadcastOfARootValueIntoADepth1000ChainNeitherRecursesNorMaterialises) {
  // A small stack turns any recursion over the depth (in the compiler, the broadcast walk,
  // key printing or teardown) into a crash instead of a silent pass.
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
  DeepResult result;
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, &run_deep_chain, &result), 0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  pthread_attr_destroy(&attr);
  ASSERT_EQ(result.error, "");
  // Row value x reaches depth 1000 as x + 1000; Add adds the broadcast x.
  EXPECT_EQ(result.outputs, (std::vector<std::string>{"1002", "1004"}));
  // 1000 levels of OneChild and First, one Add, each over both rows in batches of 2.
  EXPECT_EQ(result.rpcs, 2u * kDepth + 1u);
  std::string key = "0";
  for (int d = 0; d < kDepth; ++d) key += "/0";
  EXPECT_EQ(result.deepest_key, key);
}

}  // namespace
