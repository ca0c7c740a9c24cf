// End-to-end scenarios of the semantic runtime (DESIGN 5) on scheduling: downstream Grains
// become ready before the upstream stage finishes other parents, and outputs and causes are
// the same for every legal schedule (batch sizes, replicas, queue orders, input batches,
// reservations, SyncExecutor and the local executor).
#include <string>
#include <vector>

#include "support/runtime_scenario_checks.h"
#include "support/runtime_scenario_udfs.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

using namespace runtime_test;
using namespace runtime_test::scenario_checks;
namespace F = ro::F;

TEST(Scenario, DownstreamGrainsBecomeReadyBeforeTheUpstreamStageFinishesOtherParents) {
  ro::Module<Split> split;
  ro::Module<Ident> page;
  ro::Module<SumGroup> sum;
  auto program =
      ro::compile([&](ro::Port<int> x) { return sum(F::reduce(page(F::expand(split(x))))); });
  ro::testing::SyncExecutor ex(program);
  auto r = ex.run({2, 2, 1});
  EXPECT_EQ(r.outputs[0].value(), 20 + 21);
  const auto rpcs = log_of(ex.rpcs());
  // Document 0 is summed before the page stage has even started on document 1's pages.
  const long sum0 = position(rpcs, "SumGroup#2 [0]");
  const long page1 = position(rpcs, "Ident#1 [1/0]");
  ASSERT_GE(sum0, 0);
  ASSERT_GE(page1, 0);
  EXPECT_LT(sum0, page1) << ::testing::PrintToString(rpcs);
  EXPECT_LT(position(rpcs, "SumGroup#2 [1]"), position(rpcs, "Ident#1 [2/0]"));
}

// ---- The contract: outputs do not depend on the schedule -------------------------------

// Children of row r: 1 + r % 4 of them, valued 7r + i. A fails on v % 6 == 1, B on
// v % 4 == 3 (both on v % 12 == 7), the filter drops v % 5 == 0.
struct PartA {
  std::vector<ro::Row<int>> run(ro::Column<int> x) {
    std::vector<ro::Row<int>> out;
    for (int v : x) {
      if (v % 6 == 1) {
        out.emplace_back(ro::RecordFailure{"a:" + std::to_string(v)});
      } else {
        out.emplace_back(v);
      }
    }
    return out;
  }
};
struct PartB {
  std::vector<ro::Row<int>> run(ro::Column<int> x) {
    std::vector<ro::Row<int>> out;
    for (int v : x) {
      if (v % 4 == 3) {
        out.emplace_back(ro::RecordFailure{"b:" + std::to_string(v)});
      } else {
        out.emplace_back(2 * v);
      }
    }
    return out;
  }
};
struct KeepNot5 {
  std::vector<bool> run(ro::Column<int> x) {
    std::vector<bool> out;
    for (int v : x) out.push_back(v % 5 != 0);
    return out;
  }
};
struct Children {
  std::vector<std::vector<int>> run(ro::Column<int> x) {
    std::vector<std::vector<int>> out;
    for (int r : x) {
      std::vector<int> c;
      for (int i = 0; i < 1 + r % 4; ++i) c.push_back(7 * r + i);
      out.push_back(c);
    }
    return out;
  }
};

// The expected outputs, computed from the rules alone.
std::vector<std::string> reference_outputs(int rows, int* both_fail, int* multi_fail) {
  std::vector<std::string> out;
  for (int r = 0; r < rows; ++r) {
    std::string decided;
    std::string values;
    int failing = 0;
    for (int i = 0; i < 1 + r % 4; ++i) {
      const int v = 7 * r + i;
      const bool a_fails = v % 6 == 1, b_fails = v % 4 == 3;
      if (a_fails && b_fails) ++*both_fail;
      std::string cause;
      if (a_fails) {
        cause = "a:" + std::to_string(v);
      } else if (v % 5 != 0 && b_fails) {
        cause = "b:" + std::to_string(v);
      } else if (v % 5 == 0 && b_fails) {
        cause = "b:" + std::to_string(v);  // a failure dominates a drop
      }
      if (!cause.empty()) {
        ++failing;
        if (decided.empty()) decided = "suppressed(" + cause + ")";
        continue;
      }
      if (v % 5 == 0) continue;  // dropped, left out
      values += (values.empty() ? "" : ",") + std::to_string(3 * v);
    }
    if (failing > 1) ++*multi_fail;
    out.push_back(decided.empty() ? "[" + values + "]" : decided);
  }
  return out;
}

template <class Ex>
std::vector<std::string> run_contract(Ex& ex, int rows, const ro::RunOptions& options) {
  std::vector<int> input;
  for (int r = 0; r < rows; ++r) input.push_back(r);
  auto result = ex.run(input, options);
  std::vector<std::string> out;
  for (const auto& o : result.outputs) {
    if (!o.ok()) {
      out.push_back(issue_of(o));
      continue;
    }
    std::string values;
    for (int v : o.value()) values += (values.empty() ? "" : ",") + std::to_string(v);
    out.push_back("[" + values + "]");
  }
  return out;
}

TEST(Scenario, OutputsAndCausesAreTheSameForEveryLegalSchedule) {
  constexpr int kRows = 24;
  int both_fail = 0, multi_fail = 0;
  const auto expected = reference_outputs(kRows, &both_fail, &multi_fail);
  // The data must exercise the order-sensitive cases.
  ASSERT_GT(both_fail, 0);
  ASSERT_GT(multi_fail, 0);

  struct Config {
    int batch_a, batch_b, replicas;
    ro::RunOptions options;
    bool local;
  };
  std::vector<Config> configs;
  for (int ba : {1, 3}) {
    for (int bb : {1, 5}) {
      for (auto order : {ro::QueueOrder::fifo, ro::QueueOrder::lifo}) {
        ro::RunOptions o;
        o.queue_order = order;
        configs.push_back({ba, bb, 1, o, false});
      }
    }
  }
  {
    ro::RunOptions o;
    o.input_batch_size = 5;
    o.max_active_input_batches = 3;
    configs.push_back({2, 3, 1, o, false});
    o.reservation = ro::Reservation::parent_bound;
    o.queue_order = ro::QueueOrder::lifo;
    configs.push_back({4, 2, 1, o, false});
    o.input_batch_size = 0;
    configs.push_back({4, 2, 1, o, false});
    configs.push_back({2, 1, 3, o, true});
    o.reservation.reset();
    o.input_batch_size = 7;
    configs.push_back({1, 4, 4, o, true});
  }
  for (const Config& c : configs) {
    SCOPED_TRACE(::testing::Message()
                 << "batch " << c.batch_a << "/" << c.batch_b << " replicas " << c.replicas
                 << " input batch " << c.options.input_batch_size << " active "
                 << c.options.max_active_input_batches << " lifo "
                 << (c.options.queue_order == ro::QueueOrder::lifo) << " parent_bound "
                 << c.options.reservation.has_value() << " local " << c.local);
    ro::Module<Children> children;
    ro::Module<PartA> a = ro::Module<PartA>().batch_size(c.batch_a).replicas(c.replicas);
    ro::Module<PartB> b = ro::Module<PartB>().batch_size(c.batch_b).replicas(c.replicas);
    ro::Module<KeepNot5> keep = ro::Module<KeepNot5>().batch_size(2);
    ro::Module<Add> add = ro::Module<Add>().batch_size(c.batch_b);
    auto program = ro::compile([&](ro::Port<int> x) {
      auto kids = F::expand(children(x));
      auto kept = F::filter(a(kids), keep(kids));
      return F::reduce(add(kept, b(kids)));
    });
    ro::RunOptions options = c.options;
    options.progress = false;
    if (c.local) {
      ro::Executor ex(program);
      EXPECT_EQ(run_contract(ex, kRows, options), expected);
    } else {
      ro::testing::SyncExecutor ex(program);
      EXPECT_EQ(run_contract(ex, kRows, options), expected);
    }
  }
}

}  // namespace
