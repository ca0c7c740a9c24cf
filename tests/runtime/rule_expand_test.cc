// The expand rule of the semantic runtime (DESIGN 5, src/runtime/rule_expand.cc), proved on
// the Engine itself: every terminal outcome of the list, and aligned lists of different
// lengths.
#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "support/runtime_harness.h"
#include "support/runtime_udfs.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

using namespace runtime_test;
namespace F = ro::F;
using rd::GrainPhase;

TEST(ExpandRule, EveryTerminalOutcomeOfTheList) {
  ro::Module<P> k;
  ro::Module<S> s;
  ro::Module<Q> q;
  int kv_id = -1, s_out = -1, child = -1, q_out = -1, out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [kv, kk] = k(x);
    auto lst = s(F::filter(kv, kk));
    auto ch = F::expand(lst);
    auto qo = q(ch);
    auto r = F::reduce(qo);
    kv_id = kv.id();
    s_out = lst.id();
    child = ch.id();
    q_out = qo.id();
    out = r.id();
    return r;
  });
  const rd::RuntimePlan& plan = *program.plan();
  const int k_call = plan.ports[kv_id].op;
  const int s_call = plan.ports[s_out].op;
  const int q_call = plan.ports[q_out].op;
  const int cd = plan.ports[child].domain;
  using KResult = std::tuple<std::vector<ro::Row<int>>, std::vector<bool>>;
  using SResult = std::vector<ro::Row<std::vector<int>>>;

  // PRESENT lists of every small length: a SUCCEEDED Expansion with ordered children whose
  // values are views into the list.
  for (int n : {0, 1, 3}) {
    SCOPED_TRACE("list of " + std::to_string(n));
    EngineRig rig(program, {0});
    rig.commit(rig.reserve(k_call), KResult{{ro::Row<int>(1)}, {true}});
    std::vector<int> list;
    for (int i = 0; i < n; ++i) list.push_back(10 * (i + 1));
    rig.commit(rig.reserve(s_call), SResult{list});
    ASSERT_EQ(rig->entities(cd), static_cast<std::size_t>(n));
    const auto* stored = static_cast<const std::vector<int>*>(rig.value(s_out, 0));
    for (int i = 0; i < n; ++i) {
      const auto e = static_cast<std::uint32_t>(i);
      EXPECT_EQ(rig->entity_key(cd, e), "0/" + std::to_string(i));
      // The same key without allocating (the crash record's): source row 0, ordinal i.
      std::array<std::uint32_t, 2> ordinals{};
      std::size_t depth = 0;
      EXPECT_EQ(rig->entity_path(cd, e, ordinals, depth), 0U);
      EXPECT_EQ(depth, 1U);
      EXPECT_EQ(ordinals[0], e);
      EXPECT_EQ(rig.item(child, e), "present");
      EXPECT_EQ(rig.value(child, e), &(*stored)[static_cast<std::size_t>(i)]);
      EXPECT_EQ(rig->grain_phase(q_call, e), GrainPhase::ready);
    }
    for (int i = 0; i < n; ++i) {
      auto b = rig.reserve(q_call);
      EXPECT_EQ(rig.keys(b), "0/" + std::to_string(i));  // ordinal order
      rig.commit(b, std::vector<ro::Row<int>>{rig.input<int>(b, 0, 0)});
    }
    ASSERT_EQ(rig.item(out, 0), "present");
    EXPECT_EQ(plain(*static_cast<const ro::Group<int>*>(rig.value(out, 0))), list);
    EXPECT_TRUE(rig->complete());
  }
  // DROPPED, FAILED and SUPPRESSED lists: no children; the Expansion is DROPPED or FAILED.
  struct Case {
    std::string name;
    std::string list_item;
    std::string reduce_item;
  };
  for (const Case& c : {Case{"dropped", "dropped", "dropped"},
                        Case{"failed", "failed(bad list)", "suppressed(bad list)"},
                        Case{"suppressed", "suppressed(bad input)", "suppressed(bad input)"}}) {
    SCOPED_TRACE(c.name);
    EngineRig rig(program, {0});
    auto kb = rig.reserve(k_call);
    if (c.name == "suppressed") {
      rig.commit(kb, KResult{{ro::RecordFailure{"bad input"}}, {true}});
    } else {
      rig.commit(kb, KResult{{ro::Row<int>(1)}, {c.name != "dropped"}});
    }
    if (c.name == "failed") rig.commit(rig.reserve(s_call), SResult{ro::RecordFailure{"bad list"}});
    EXPECT_FALSE(rig->reserve(s_call).has_value());
    EXPECT_EQ(rig.item(s_out, 0), c.list_item);
    EXPECT_EQ(rig->entities(cd), 0u);
    EXPECT_EQ(rig.item(out, 0), c.reduce_item);
    EXPECT_TRUE(rig->complete());
  }
}

TEST(ExpandRule, AlignedListsOfDifferentLengthsPublishNothing) {
  ro::Module<S2> s2;
  ro::Module<Sum2> sum;
  int a_port = -1, out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [la, lb] = s2(x);
    auto [a, b] = F::expand_aligned(la, lb);
    auto r = F::reduce(sum(a, b));
    a_port = a.id();
    out = r.id();
    return r;
  });
  using Lists = std::tuple<std::vector<std::vector<int>>, std::vector<std::vector<int>>>;
  {
    EngineRig rig(program, {0, 1});
    auto b = rig.reserve(rig.call("S2#0"));
    ASSERT_EQ(rig.keys(b), "0");  // batch size 1
    rig.commit(b, Lists{{{1, 2}}, {{3, 4}}});
    EXPECT_TRUE(rig->fatal_error().empty());
    EXPECT_EQ(rig->entities(rig.domain_of_port(a_port)), 2u);
    auto b1 = rig.reserve(rig.call("S2#0"));
    rig.commit(b1, Lists{{{1, 2}}, {{3, 4, 5}}});
    // Root 1 publishes no Expansion, no child and no reduce Item.
    EXPECT_EQ(rig->entities(rig.domain_of_port(a_port)), 2u);
    EXPECT_EQ(rig.item(out, 1), "unresolved");
    const std::string& err = rig->fatal_error();
    EXPECT_NE(err.find("S2#0"), std::string::npos) << err;
    EXPECT_NE(err.find("entity 1"), std::string::npos) << err;
    EXPECT_NE(err.find("2 elements"), std::string::npos) << err;
    EXPECT_NE(err.find("has 3"), std::string::npos) << err;
    EXPECT_FALSE(rig->complete());
  }
}

}  // namespace
