// The filter rule of the semantic runtime (DESIGN 5, src/runtime/rule_filter.cc), a closed
// table proved on the Engine itself: every source and mask outcome, in both arrival orders.
#include <string>
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

TEST(FilterRule, EverySourceAndMaskOutcomeInBothOrders) {
  ro::Module<Q> qs, qm;
  ro::Module<P> ps;
  ro::Module<PMask> pm;
  int ids[6] = {};
  int out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto qso = qs(x);
    auto [sv, sk] = ps(qso);
    auto src = F::filter(sv, sk);
    auto qmo = qm(x);
    auto [mv, mk] = pm(qmo);
    auto mask = F::filter(mv, mk);
    auto o = F::filter(src, mask);
    ids[0] = qso.id();
    ids[1] = sv.id();
    ids[2] = src.id();
    ids[3] = qmo.id();
    ids[4] = mv.id();
    ids[5] = mask.id();
    out = o.id();
    return o;
  });
  const rd::RuntimePlan& plan = *program.plan();
  const Chain schain{plan.ports[ids[0]].op, plan.ports[ids[1]].op, ids[2]};
  const Chain mchain{plan.ports[ids[3]].op, plan.ports[ids[4]].op, ids[5]};

  // Mask outcomes: the four fates, PRESENT split into true and false.
  struct MaskCase {
    Fate fate;
    bool value;
  };
  const std::vector<MaskCase> masks = {{Fate::present, true},
                                       {Fate::present, false},
                                       {Fate::dropped, true},
                                       {Fate::failed, true},
                                       {Fate::suppressed, true}};
  int runs = 0;
  for (Fate sf : kAllFates) {
    for (const MaskCase& mc : masks) {
      for (bool source_first : {true, false}) {
        SCOPED_TRACE(std::string("source ") + fate_name(sf) + " mask " + fate_name(mc.fate) +
                     (mc.value ? "/true" : "/false") +
                     (source_first ? " source first" : " mask first"));
        EngineRig rig(program, {7});
        ChainDriver<int> sd(rig, schain, "s");
        ChainDriver<bool> md(rig, mchain, "m");
        sd.prepare({{0u, sf}});
        md.prepare({{0u, mc.fate}});
        // The filter's verdict: a non-PRESENT source passes through, else a non-PRESENT
        // mask, else the mask's value.
        std::string expected;
        if (sf != Fate::present) {
          expected = sd.expected_item(0);
        } else if (mc.fate != Fate::present) {
          expected = md.expected_item(0);
        } else {
          expected = mc.value ? "present" : "dropped";
        }
        if (source_first) {
          sd.resolve(0, 42);
          // A non-PRESENT source decides without waiting for the mask.
          EXPECT_EQ(rig.item(out, 0), sf == Fate::present ? "unresolved" : expected);
          md.resolve(0, mc.value);
        } else {
          md.resolve(0, mc.value);
          EXPECT_EQ(rig.item(out, 0), "unresolved");  // the source always decides first
          sd.resolve(0, 42);
        }
        EXPECT_EQ(rig.item(out, 0), expected);
        if (expected == "present") {
          // Same value, no copy.
          EXPECT_EQ(rig.value(out, 0), rig.value(schain.port, 0));
          EXPECT_EQ(*static_cast<const int*>(rig.value(out, 0)), 42);
        }
        EXPECT_TRUE(rig->complete());
        ++runs;
      }
    }
  }
  EXPECT_EQ(runs, 4 * 5 * 2);
}

}  // namespace
