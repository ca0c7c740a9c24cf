// The broadcast rule of the semantic runtime (DESIGN 5, src/runtime/rule_broadcast.cc), a
// closed table proved on the Engine itself: every outcome of the ancestor Item, arriving
// before, between or after the expansions, one and two levels deep, among many parents.
#include <algorithm>
#include <cstdint>
#include <map>
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

TEST(BroadcastRule, EverySourceOutcomeBeforeAndAfterTheExpansion) {
  ro::Module<Q> qb;
  ro::Module<P> pb;
  ro::Module<S> s;
  int ids[3] = {};
  int b_port = -1, out = -1, s_out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto qo = qb(x);
    auto [bv, bk] = pb(qo);
    auto src = F::filter(bv, bk);
    auto lst = s(x);
    auto b = F::broadcast(src, F::expand(lst));
    auto r = F::reduce(b);
    ids[0] = qo.id();
    ids[1] = bv.id();
    ids[2] = src.id();
    b_port = b.id();
    s_out = lst.id();
    out = r.id();
    return r;
  });
  const rd::RuntimePlan& plan = *program.plan();
  const Chain bchain{plan.ports[ids[0]].op, plan.ports[ids[1]].op, ids[2]};
  const int s_call = plan.ports[s_out].op;
  int runs = 0;
  for (Fate f : kAllFates) {
    for (int n : {0, 1, 3}) {
      for (bool source_first : {true, false}) {
        SCOPED_TRACE(std::string(fate_name(f)) + " n=" + std::to_string(n) +
                     (source_first ? " source first" : " expansion first"));
        EngineRig rig(program, {n});
        ChainDriver<int> bd(rig, bchain, "b");
        bd.prepare({{0u, f}});
        auto expand_now = [&] {
          rig.commit(rig.reserve(s_call), std::vector<ro::Row<std::vector<int>>>{
                                              std::vector<int>(static_cast<std::size_t>(n), 1)});
        };
        if (source_first) {
          bd.resolve(0, 55);
          expand_now();
        } else {
          expand_now();
          for (int c = 0; c < n; ++c) EXPECT_EQ(rig.item(b_port, c), "unresolved");
          bd.resolve(0, 55);
        }
        // A view: outcome, cause and value address of the ancestor Item.
        for (int c = 0; c < n; ++c) {
          EXPECT_EQ(rig.item(b_port, c), bd.expected_item(0));
          EXPECT_EQ(rig.value(b_port, c), rig.value(bchain.port, 0));
        }
        std::string expected_out;
        if (f == Fate::present || f == Fate::dropped) {
          expected_out = "present";
        } else {
          expected_out = n == 0 ? "present" : "suppressed(" + bd.cause(0) + ")";
        }
        EXPECT_EQ(rig.item(out, 0), expected_out);
        if (expected_out == "present") {
          const auto* g = static_cast<const ro::Group<int>*>(rig.value(out, 0));
          const std::size_t survivors = f == Fate::present ? static_cast<std::size_t>(n) : 0;
          EXPECT_EQ(plain(*g), std::vector<int>(survivors, 55));
        }
        EXPECT_TRUE(rig->complete());
        ++runs;
      }
    }
  }
  EXPECT_EQ(runs, 4 * 3 * 2);
}

// Two levels deep: the ancestor fact may arrive before, between or after the expansions, and
// a chain of broadcasts (kept when optimize=false, collapsed otherwise) gives the same Items.
TEST(BroadcastRule, TwoLevelsDeepInEveryInterleavingWithAndWithoutCanonicalisation) {
  for (bool optimize : {true, false}) {
    for (bool chained : {false, true}) {
      ro::Module<Q> qb;
      ro::Module<P> pb;
      ro::Module<S> s1, s2;
      int ids[3] = {};
      int b2_port = -1, out = -1, s1_out = -1, s2_out = -1;
      auto program = ro::compile(
          [&](ro::Port<int> x) {
            auto qo = qb(x);
            auto [bv, bk] = pb(qo);
            auto src = F::filter(bv, bk);
            auto l1 = s1(x);
            auto c1 = F::expand(l1);
            auto l2 = s2(c1);
            auto c2 = F::expand(l2);
            auto b2 = chained ? F::broadcast(F::broadcast(src, c1), c2) : F::broadcast(src, c2);
            auto r = F::reduce(F::reduce(b2));
            ids[0] = qo.id();
            ids[1] = bv.id();
            ids[2] = src.id();
            b2_port = b2.id();
            s1_out = l1.id();
            s2_out = l2.id();
            out = r.id();
            return r;
          },
          {.optimize = optimize});
      const rd::RuntimePlan& plan = *program.plan();
      const Chain bchain{plan.ports[ids[0]].op, plan.ports[ids[1]].op, ids[2]};
      const int s1_call = plan.ports[s1_out].op;
      const int s2_call = plan.ports[s2_out].op;
      for (Fate f : {Fate::present, Fate::failed}) {
        // Events: 0 = the source resolves, 1 = the first expansion, 2 and 3 = the two second
        // level expansions (which need the first one).
        for (const auto& order : permutations(4)) {
          const auto pos = [&](int ev) {
            return std::find(order.begin(), order.end(), ev) - order.begin();
          };
          if (pos(1) > pos(2) || pos(1) > pos(3)) continue;
          SCOPED_TRACE(std::string(fate_name(f)) + describe({}, order) +
                       (optimize ? " optimized" : " unoptimized") + (chained ? " chained" : ""));
          EngineRig rig(program, {2});
          ChainDriver<int> bd(rig, bchain, "b");
          bd.prepare({{0u, f}});
          std::vector<rd::Invocation> s2_batches;
          for (int ev : order) {
            if (ev == 0) bd.resolve(0, 77);
            if (ev == 1) {
              rig.commit(rig.reserve(s1_call),
                         std::vector<ro::Row<std::vector<int>>>{std::vector<int>{2, 3}});
              s2_batches.push_back(rig.reserve(s2_call));
              s2_batches.push_back(rig.reserve(s2_call));
            }
            if (ev >= 2) {
              const auto& b = s2_batches[static_cast<std::size_t>(ev - 2)];
              const int n = ev == 2 ? 2 : 3;
              rig.commit(b, std::vector<ro::Row<std::vector<int>>>{
                                std::vector<int>(static_cast<std::size_t>(n), 0)});
            }
          }
          const int d2 = rig.domain_of_port(b2_port);
          ASSERT_EQ(rig->entities(d2), 5u);
          for (std::uint32_t e = 0; e < 5; ++e) {
            EXPECT_EQ(rig.item(b2_port, e), bd.expected_item(0));
            EXPECT_EQ(rig.value(b2_port, e), rig.value(bchain.port, 0));
          }
          if (f == Fate::present) {
            ASSERT_EQ(rig.item(out, 0), "present");
            const auto* g = static_cast<const ro::Group<ro::Group<int>>*>(rig.value(out, 0));
            EXPECT_EQ(plain(*g), (std::vector<std::vector<int>>{{77, 77}, {77, 77, 77}}));
          } else {
            EXPECT_EQ(rig.item(out, 0), "suppressed(" + bd.cause(0) + ")");
          }
          EXPECT_TRUE(rig->complete());
        }
      }
    }
  }
}

// Several parents with different child counts, so that Entity indices of different Domains
// never coincide: every child must see its own ancestor's Item, at depth 1 and depth 2.
TEST(BroadcastRule, EveryChildSeesItsOwnAncestorAmongManyParents) {
  for (bool chained : {false, true}) {
    for (bool optimize : {true, false}) {
      ro::Module<Q> qb;
      ro::Module<P> pb;
      ro::Module<S> s1, s2;
      int ids[3] = {};
      int b1_port = -1, b2_port = -1, s1_out = -1, s2_out = -1;
      auto program = ro::compile(
          [&](ro::Port<int> x) {
            auto qo = qb(x);
            auto [bv, bk] = pb(qo);
            auto src = F::filter(bv, bk);
            auto l1 = s1(x);
            auto c1 = F::expand(l1);
            auto l2 = s2(c1);
            auto c2 = F::expand(l2);
            auto b1 = F::broadcast(src, c1);
            auto b2 = chained ? F::broadcast(b1, c2) : F::broadcast(src, c2);
            ids[0] = qo.id();
            ids[1] = bv.id();
            ids[2] = src.id();
            b1_port = b1.id();
            b2_port = b2.id();
            s1_out = l1.id();
            s2_out = l2.id();
            return std::make_tuple(F::reduce(b1), F::reduce(F::reduce(b2)));
          },
          {.optimize = optimize});
      const rd::RuntimePlan& plan = *program.plan();
      const Chain bchain{plan.ports[ids[0]].op, plan.ports[ids[1]].op, ids[2]};
      const int s1_call = plan.ports[s1_out].op;
      const int s2_call = plan.ports[s2_out].op;
      const std::vector<int> counts = {2, 0, 3, 1, 2};
      for (bool sources_first : {true, false}) {
        SCOPED_TRACE(std::string(chained ? "chained" : "direct") +
                     (optimize ? " optimized" : " unoptimized") +
                     (sources_first ? " sources first" : " expansions first"));
        EngineRig rig(program, {0, 1, 2, 3, 4});
        ChainDriver<int> bd(rig, bchain, "b");
        std::map<std::uint32_t, Fate> fates;
        for (std::uint32_t r = 0; r < 5; ++r) fates[r] = kAllFates[r % 4];
        bd.prepare(fates);
        auto resolve_sources = [&](bool odd) {
          for (std::uint32_t r = 0; r < 5; ++r) {
            if ((r % 2 == 1) == odd) bd.resolve(r, 1000 + static_cast<int>(r));
          }
        };
        if (sources_first) resolve_sources(false);
        // Expand the roots in reverse order so that child Entity indices do not follow roots.
        std::vector<rd::Invocation> roots;
        for (int r = 0; r < 5; ++r) roots.push_back(rig.reserve(s1_call));
        for (int r = 4; r >= 0; --r) {
          rig.commit(roots[static_cast<std::size_t>(r)],
                     std::vector<ro::Row<std::vector<int>>>{std::vector<int>(
                         static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]), r)});
        }
        if (!sources_first) resolve_sources(false);
        // Every level-1 child of root r gets r + 1 children.
        while (auto b = rig->reserve(s2_call)) {
          const int root = rig.input<int>(*b, 0, 0);
          rig.commit(*b, std::vector<ro::Row<std::vector<int>>>{
                             std::vector<int>(static_cast<std::size_t>(root + 1), root)});
        }
        resolve_sources(true);
        for (int level : {1, 2}) {
          const int port = level == 1 ? b1_port : b2_port;
          const int d = rig.domain_of_port(port);
          std::size_t expected_children = 0;
          for (int r = 0; r < 5; ++r) {
            expected_children += static_cast<std::size_t>(counts[static_cast<std::size_t>(r)] *
                                                          (level == 2 ? r + 1 : 1));
          }
          ASSERT_EQ(rig->entities(d), expected_children);
          for (std::uint32_t e = 0; e < expected_children; ++e) {
            const std::string key = rig->entity_key(d, e);
            const auto root = static_cast<std::uint32_t>(std::stoi(key.substr(0, key.find('/'))));
            EXPECT_EQ(rig.item(port, e), bd.expected_item(root)) << key;
            EXPECT_EQ(rig.value(port, e), rig.value(bchain.port, root)) << key;
          }
        }
        EXPECT_TRUE(rig->complete());
      }
    }
  }
}

}  // namespace
