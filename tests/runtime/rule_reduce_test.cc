// The reduce rule of the semantic runtime (DESIGN 5, src/runtime/rule_reduce.cc), a closed
// table proved on the Engine itself: every Expansion outcome, every mix of member (and value)
// outcomes and every arrival order of the commits that produce them.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
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

// How the parent's Expansion turns out.
enum class ExpFate { succeeded, dropped, failed, suppressed };

// Reference model: members are scanned in ordinal order; an unresolved member blocks, the
// first failing member decides SUPPRESSED with its own cause, DROPPED members are left out.
struct ReduceModel {
  // Per child: member fate, value fate (nullopt when the reduce has no separate values).
  std::vector<Fate> member;
  std::vector<std::optional<Fate>> value;
  std::vector<std::string> member_cause, value_cause;

  Verdict decide(const std::vector<bool>& m_resolved, const std::vector<bool>& v_resolved,
                 std::vector<int>* group) const {
    if (group) group->clear();
    for (std::size_t k = 0; k < member.size(); ++k) {
      if (!m_resolved[k]) return {};
      if (is_failing(member[k])) return {true, "suppressed(" + member_cause[k] + ")"};
      if (member[k] == Fate::dropped) continue;
      if (value[k]) {
        if (!v_resolved[k]) return {};
        if (is_failing(*value[k])) return {true, "suppressed(" + value_cause[k] + ")"};
        if (*value[k] == Fate::dropped) {
          return {true,
                  "suppressed(member 0/" + std::to_string(k) + " of a reduce group was dropped)"};
        }
      }
      if (group) group->push_back(static_cast<int>(k));
    }
    return {true, "present"};
  }
};

struct ReduceProgram {
  ro::Module<P> k;
  ro::Module<S> s;
  ro::Module<Q> q;
  ro::Module<P> p;
  int k_call = -1, s_call = -1, out = -1, child_port = -1;
  Chain members;
};

// K -> filter -> S -> expand -> (Q -> P -> filter) -> reduce. K decides whether the Expansion
// is DROPPED (keep=false) or FAILED via a SUPPRESSED list (K fails); S decides a FAILED list.
// `colocated`: every Module shares one pool (DESIGN 5.12), which changes no rule.
void check_every_expansion_outcome(bool colocated) {
  ReduceProgram rp;
  if (colocated) {
    rp.k.colocate("all");
    rp.s.colocate("all");
    rp.q.colocate("all");
    rp.p.colocate("all");
  }
  int kv_id = -1, s_out = -1, q_out = -1, pv_id = -1, m_id = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto [kv, kk] = rp.k(x);
    auto lst = rp.s(F::filter(kv, kk));
    auto ch = F::expand(lst);
    auto qo = rp.q(ch);
    auto [pv, pk] = rp.p(qo);
    auto m = F::filter(pv, pk);
    auto r = F::reduce(m);
    kv_id = kv.id();
    s_out = lst.id();
    q_out = qo.id();
    pv_id = pv.id();
    m_id = m.id();
    rp.child_port = ch.id();
    rp.out = r.id();
    return r;
  });
  const rd::RuntimePlan& plan = *program.plan();
  rp.k_call = plan.ports[kv_id].op;
  rp.s_call = plan.ports[s_out].op;
  rp.members = Chain{plan.ports[q_out].op, plan.ports[pv_id].op, m_id};
  const int child_domain = plan.ports[rp.child_port].domain;

  auto start = [&](EngineRig& rig, ExpFate ef, int n) {
    auto kb = rig.reserve(rp.k_call);
    using KResult = std::tuple<std::vector<ro::Row<int>>, std::vector<bool>>;
    if (ef == ExpFate::suppressed) {
      rig.commit(kb, KResult{{ro::RecordFailure{"k failed"}}, {false}});
      return;
    }
    rig.commit(kb, KResult{{ro::Row<int>(n)}, {ef != ExpFate::dropped}});
    if (ef == ExpFate::dropped) return;
    auto sb = rig.reserve(rp.s_call);
    if (ef == ExpFate::failed) {
      rig.commit(sb, std::vector<ro::Row<std::vector<int>>>{ro::RecordFailure{"s failed"}});
    } else {
      std::vector<int> list;
      for (int i = 0; i < n; ++i) list.push_back(100 + i);
      rig.commit(sb, std::vector<ro::Row<std::vector<int>>>{ro::Row<std::vector<int>>(list)});
    }
  };

  // Expansions that do not succeed decide the reduce at once, with no child at all.
  const std::vector<std::pair<ExpFate, std::string>> unsuccessful = {
      {ExpFate::dropped, "dropped"},
      {ExpFate::failed, "suppressed(s failed)"},
      {ExpFate::suppressed, "suppressed(k failed)"}};
  for (const auto& [ef, expected] : unsuccessful) {
    SCOPED_TRACE(expected);
    EngineRig rig(program, {7});
    start(rig, ef, 3);
    EXPECT_EQ(rig.item(rp.out, 0), expected);
    EXPECT_EQ(rig->entities(child_domain), 0u);
    EXPECT_TRUE(rig->complete());
  }

  // A successful Expansion of 0..3 children, every member outcome mix, every arrival order.
  int runs = 0;
  for (int n = 0; n <= 3; ++n) {
    for (const auto& fates : assignments(kAllFates, n)) {
      for (const auto& order : permutations(n)) {
        SCOPED_TRACE("n=" + std::to_string(n) + " " + describe(fates, order));
        EngineRig rig(program, {7});
        start(rig, ExpFate::succeeded, n);
        ASSERT_EQ(rig->entities(child_domain), static_cast<std::size_t>(n));
        ChainDriver<int> members(rig, rp.members, "m");
        std::map<std::uint32_t, Fate> by_entity;
        ReduceModel model;
        for (int c = 0; c < n; ++c) by_entity[static_cast<std::uint32_t>(c)] = fates[c];
        members.prepare(by_entity);
        for (int c = 0; c < n; ++c) {
          model.member.push_back(fates[c]);
          model.value.push_back(std::nullopt);
          model.member_cause.push_back(members.cause(static_cast<std::uint32_t>(c)));
          model.value_cause.emplace_back();
        }
        std::vector<bool> resolved(static_cast<std::size_t>(n), false);
        std::vector<int> group;
        bool published = false;
        auto check = [&](const std::string& when) {
          SCOPED_TRACE(when);
          const Verdict v = model.decide(resolved, resolved, &group);
          if (!v.decided) {
            EXPECT_EQ(rig.item(rp.out, 0), "unresolved");
            return;
          }
          // A decision is a fact: it never changes afterwards.
          published = true;
          if (v.item != "present") {
            EXPECT_EQ(rig.item(rp.out, 0), v.item);
            return;
          }
          ASSERT_EQ(rig.item(rp.out, 0), "present");
          const auto* g = static_cast<const ro::Group<int>*>(rig.value(rp.out, 0));
          std::vector<int> expected;
          for (int c : group) expected.push_back(200 + c);
          EXPECT_EQ(plain(*g), expected);
        };
        check("after the expansion");
        for (int step = 0; step < n; ++step) {
          const int c = order[step];
          members.resolve(static_cast<std::uint32_t>(c), 200 + c);
          resolved[static_cast<std::size_t>(c)] = true;
          check("after step " + std::to_string(step));
        }
        EXPECT_TRUE(published);
        EXPECT_TRUE(rig->complete());
        ++runs;
      }
    }
  }
  EXPECT_EQ(runs, 1 + 4 + 16 * 2 + 64 * 6);
  EXPECT_EQ(program.plan()->pools.size(), colocated ? 1u : 4u);
}

TEST(ReduceRule, EveryExpansionOutcomeMemberMixAndArrivalOrder) {
  check_every_expansion_outcome(false);
}
TEST(ReduceRule, EveryExpansionOutcomeMemberMixAndArrivalOrderCoLocated) {
  check_every_expansion_outcome(true);
}

TEST(ReduceRule, FailureDominatesPendingHigherMembers) {
  // Member 0 fails while members 1 and 2 have not even been dispatched: the group is decided
  // at once and the later members cannot change it.
  ro::Module<S> s;
  ro::Module<Q> q;
  int out = -1, q_out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto qo = q(F::expand(s(x)));
    auto r = F::reduce(qo);
    q_out = qo.id();
    out = r.id();
    return r;
  });
  EngineRig rig(program, {3});
  const int s_call = rig.call("S#0");
  const int q_call = rig.call("Q#1");
  rig.commit(rig.reserve(s_call),
             std::vector<ro::Row<std::vector<int>>>{std::vector<int>{1, 2, 3}});
  auto b0 = rig.reserve(q_call);
  ASSERT_EQ(rig.keys(b0), "0/0");
  rig.commit(b0, std::vector<ro::Row<int>>{ro::RecordFailure{"first page unreadable"}});
  EXPECT_EQ(rig.item(out, 0), "suppressed(first page unreadable)");
  EXPECT_EQ(rig.finished(), std::vector<std::uint32_t>{0});
  EXPECT_EQ(rig.item(q_out, 1), "unresolved");
  // The siblings still run (a RecordFailure does not stop them) and change nothing.
  auto b1 = rig.reserve(q_call);
  auto b2 = rig.reserve(q_call);
  rig.commit(b2, std::vector<ro::Row<int>>{ro::RecordFailure{"third page unreadable"}});
  rig.commit(b1, std::vector<ro::Row<int>>{5});
  EXPECT_EQ(rig.item(out, 0), "suppressed(first page unreadable)");
  EXPECT_TRUE(rig->complete());
}

// reduce(values, members): every (member outcome, value outcome) for two children, in every
// arrival order of the four Items.
TEST(ReduceRule, ExplicitMembersEveryMemberAndValueOutcomeInEveryOrder) {
  ro::Module<S> s;
  ro::Module<Q> qm, qv;
  ro::Module<P> pm, pv;
  int ids[6] = {};
  int out = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
    auto ch = F::expand(s(x));
    auto qmo = qm(ch);
    auto [mv, mk] = pm(qmo);
    auto m = F::filter(mv, mk);
    auto qvo = qv(ch);
    auto [vv, vk] = pv(qvo);
    auto v = F::filter(vv, vk);
    auto r = F::reduce(v, F::members(m));
    ids[0] = qmo.id();
    ids[1] = mv.id();
    ids[2] = m.id();
    ids[3] = qvo.id();
    ids[4] = vv.id();
    ids[5] = v.id();
    out = r.id();
    return r;
  });
  const rd::RuntimePlan& plan = *program.plan();
  const Chain mchain{plan.ports[ids[0]].op, plan.ports[ids[1]].op, ids[2]};
  const Chain vchain{plan.ports[ids[3]].op, plan.ports[ids[4]].op, ids[5]};

  int runs = 0;
  for (const auto& fates : assignments(kAllFates, 4)) {  // m0, m1, v0, v1
    for (const auto& order : permutations(4)) {
      SCOPED_TRACE(describe(fates, order));
      EngineRig rig(program, {7});
      rig.commit(rig.reserve(rig.call("S#0")),
                 std::vector<ro::Row<std::vector<int>>>{std::vector<int>{1, 1}});
      ChainDriver<int> md(rig, mchain, "m");
      ChainDriver<int> vd(rig, vchain, "v");
      md.prepare({{0u, fates[0]}, {1u, fates[1]}});
      vd.prepare({{0u, fates[2]}, {1u, fates[3]}});
      ReduceModel model;
      for (std::uint32_t c = 0; c < 2; ++c) {
        model.member.push_back(fates[c]);
        model.value.push_back(fates[2 + c]);
        model.member_cause.push_back(md.cause(c));
        model.value_cause.push_back(vd.cause(c));
      }
      std::vector<bool> m_resolved(2, false), v_resolved(2, false);
      std::vector<int> group;
      for (int step = 0; step < 4; ++step) {
        const int ev = order[step];
        const std::uint32_t c = static_cast<std::uint32_t>(ev % 2);
        if (ev < 2) {
          md.resolve(c, 300 + static_cast<int>(c));
          m_resolved[c] = true;
        } else {
          vd.resolve(c, 400 + static_cast<int>(c));
          v_resolved[c] = true;
        }
        SCOPED_TRACE("after step " + std::to_string(step));
        const Verdict v = model.decide(m_resolved, v_resolved, &group);
        // A PRESENT group also waits until every Grain of the Calls upstream of its values
        // and members is sealed under the parent: a late GroupFailure of one of them would
        // suppress it (DESIGN 5), even one whose member is dropped.
        const bool all_sealed = m_resolved[0] && m_resolved[1] && v_resolved[0] && v_resolved[1];
        if (!v.decided || (v.item == "present" && !all_sealed)) {
          EXPECT_EQ(rig.item(out, 0), "unresolved");
        } else if (v.item != "present") {
          EXPECT_EQ(rig.item(out, 0), v.item);
        } else {
          ASSERT_EQ(rig.item(out, 0), "present");
          std::vector<int> expected;
          for (int k : group) expected.push_back(400 + k);
          EXPECT_EQ(plain(*static_cast<const ro::Group<int>*>(rig.value(out, 0))), expected);
        }
      }
      EXPECT_TRUE(rig->complete());
      ++runs;
    }
  }
  EXPECT_EQ(runs, 256 * 24);
}

}  // namespace
