// The call input rule of the semantic runtime (DESIGN 5, src/runtime/rule_call_input.cc), a
// closed table proved on the Engine itself: every input outcome is produced by real commits,
// and the tests choose the order in which those commits arrive, so the rule is checked for
// every combination and every arrival order.
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "support/rule_tables.h"
#include "support/runtime_harness.h"
#include "support/runtime_udfs.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

using namespace runtime_test;
using namespace runtime_test::rule_tables;
namespace F = ro::F;
using rd::GrainPhase;

// The rule of DESIGN 5 as a reference model over the resolved inputs. The deciding failure is
// the lowest-index failing input, so an input can decide only once every lower-index input
// is resolved; this keeps the cause independent of arrival order.
Verdict call_input_model(const std::vector<Fate>& fates, const std::vector<bool>& resolved,
                         const std::vector<std::string>& causes) {
  bool drop = false;
  for (std::size_t i = 0; i < fates.size(); ++i) {
    if (!resolved[i]) return {};
    if (is_failing(fates[i])) return {true, "suppressed(" + causes[i] + ")"};
    drop = drop || fates[i] == Fate::dropped;
  }
  return {true, drop ? "dropped" : "present"};
}

// Co-location changes no rule (DESIGN 5.12). `declared`: Q, P and the sum share one pool;
// `found`: the compiler co-locates Q with P, the one Module that reads Q's values.
enum class Colocation { none, declared, found };

template <int N>
void check_call_input_rule(Colocation colocation) {
  const bool colocated = colocation == Colocation::declared;
  ro::Module<Q> q;
  ro::Module<P> p;
  ro::Module<Sum2> sum2;
  ro::Module<Sum3> sum3;
  if (colocated) {
    q.colocate("chain");
    p.colocate("chain");
    sum2.colocate("chain");
    sum3.colocate("chain");
  }
  std::vector<std::tuple<int, int, int>> ids;  // (q output, p value, filtered)
  int out_port = -1;
  auto program = ro::compile(
      [&](ro::Port<int> x) {
        std::vector<ro::Port<int>> ins;
        for (int i = 0; i < N; ++i) {
          auto qo = q(x);
          auto [pv, pk] = p(qo);
          auto in = F::filter(pv, pk);
          ids.emplace_back(qo.id(), pv.id(), in.id());
          ins.push_back(in);
        }
        ro::Port<int> out = [&] {
          if constexpr (N == 2) {
            return sum2(ins[0], ins[1]);
          } else {
            return sum3(ins[0], ins[1], ins[2]);
          }
        }();
        out_port = out.id();
        return out;
      },
      {.auto_colocate = colocation == Colocation::found});
  const rd::RuntimePlan& plan = *program.plan();
  std::vector<Chain> chains;
  for (auto [qo, pv, in] : ids) chains.push_back(Chain{plan.ports[qo].op, plan.ports[pv].op, in});
  const int c_call = plan.ports[out_port].op;

  int runs = 0;
  for (const auto& fates : assignments(kAllFates, N)) {
    for (const auto& order : permutations(N)) {
      SCOPED_TRACE(describe(fates, order));
      EngineRig rig(program, {7});
      std::vector<std::unique_ptr<ChainDriver<int>>> drivers;
      std::vector<std::string> causes;
      for (int i = 0; i < N; ++i) {
        drivers.push_back(
            std::make_unique<ChainDriver<int>>(rig, chains[i], "in" + std::to_string(i) + "-"));
        drivers.back()->prepare({{0u, fates[i]}});
        causes.push_back(drivers.back()->cause(0));
      }
      ASSERT_EQ(rig->grain_phase(c_call, 0), GrainPhase::waiting);
      std::vector<bool> resolved(N, false);
      for (int step = 0; step < N; ++step) {
        const int i = order[step];
        drivers[i]->resolve(0, 10 * (i + 1));
        resolved[i] = true;
        ASSERT_EQ(rig.item(chains[i].port, 0), drivers[i]->expected_item(0));
        const Verdict v = call_input_model(fates, resolved, causes);
        SCOPED_TRACE("after step " + std::to_string(step));
        if (!v.decided) {
          EXPECT_EQ(rig->grain_phase(c_call, 0), GrainPhase::waiting);
          EXPECT_EQ(rig.item(out_port, 0), "unresolved");
        } else if (v.item == "present") {
          EXPECT_EQ(rig->grain_phase(c_call, 0), GrainPhase::ready);
          EXPECT_EQ(rig.item(out_port, 0), "unresolved");
        } else {
          EXPECT_EQ(rig->grain_phase(c_call, 0), GrainPhase::sealed);
          EXPECT_EQ(rig.item(out_port, 0), v.item);
          // Sealed without READY: the UDF is never called.
          EXPECT_FALSE(rig->has_work(c_call));
        }
      }
      const Verdict final_v = call_input_model(fates, resolved, causes);
      if (final_v.item == "present") {
        rd::Invocation b = rig.reserve(c_call);
        ASSERT_EQ(rig.keys(b), "0");
        int expected = 0;
        for (int i = 0; i < N; ++i) {
          expected += rig.input<int>(b, static_cast<std::size_t>(i), 0);
        }
        EXPECT_EQ(expected, N == 2 ? 30 : 60);  // each input carries P's value
        EXPECT_EQ(rig.commit(b, std::vector<int>{expected}), rd::CommitStatus::accepted);
        EXPECT_EQ(rig.item(out_port, 0), "present");
      }
      EXPECT_FALSE(rig->reserve(c_call).has_value());
      EXPECT_TRUE(rig->complete());
      EXPECT_EQ(rig.finished(), std::vector<std::uint32_t>{0});
      ++runs;
    }
  }
  EXPECT_EQ(runs, N == 2 ? 16 * 2 : 64 * 6);
  EXPECT_EQ(plan.pools.size(), colocated ? 1u : colocation == Colocation::found ? 2u : 3u);
}

TEST(CallInputRule, TwoInputsEveryOutcomeInEveryArrivalOrder) {
  check_call_input_rule<2>(Colocation::none);
}
TEST(CallInputRule, ThreeInputsEveryOutcomeInEveryArrivalOrder) {
  check_call_input_rule<3>(Colocation::none);
}
TEST(CallInputRule, TwoInputsEveryOutcomeInEveryArrivalOrderCoLocated) {
  check_call_input_rule<2>(Colocation::declared);
}
TEST(CallInputRule, ThreeInputsEveryOutcomeInEveryArrivalOrderCoLocated) {
  check_call_input_rule<3>(Colocation::declared);
}
TEST(CallInputRule, TwoInputsEveryOutcomeInEveryArrivalOrderCoLocatedByTheCompiler) {
  check_call_input_rule<2>(Colocation::found);
}
TEST(CallInputRule, ThreeInputsEveryOutcomeInEveryArrivalOrderCoLocatedByTheCompiler) {
  check_call_input_rule<3>(Colocation::found);
}

}  // namespace
