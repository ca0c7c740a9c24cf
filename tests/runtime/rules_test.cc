// Closed rule tables of the semantic runtime (DESIGN 5), proved on the Engine itself: every
// input outcome is produced by real commits, and the tests choose the order in which those
// commits arrive, so each rule is checked for every combination and every arrival order.
#include <map>
#include <optional>
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
using rd::GrainEvent;
using rd::GrainPhase;
using rd::ItemState;

// One input produced by the chain Q -> P -> filter(value, keep). The chain can give its
// final Port any of the four outcomes: PRESENT (keep), DROPPED (keep=false), FAILED
// (P returns a RecordFailure) and SUPPRESSED (Q fails, so P never runs).
struct Chain {
  int q_call = -1;
  int p_call = -1;
  int port = -1;  // the filtered Port
};

// Drives one Chain over a set of Entities of its Domain. prepare() reserves every Q Grain
// (one RPC each), commits those whose fate needs P and reserves P; resolve() then delivers
// one Entity's final outcome, so the caller decides the arrival order.
template <class V>
class ChainDriver {
 public:
  ChainDriver(EngineRig& rig, Chain chain, std::string tag)
      : rig_(rig), chain_(chain), tag_(std::move(tag)) {}

  void prepare(const std::map<std::uint32_t, Fate>& fates) {
    fates_ = fates;
    for (std::size_t i = 0; i < fates.size(); ++i) {
      rd::Invocation b = rig_.reserve(chain_.q_call);
      q_batch_.emplace(b.grains.at(0), b);
    }
    for (const auto& [e, fate] : fates) {
      if (fate == Fate::suppressed) continue;
      const rd::Invocation& b = q_batch_.at(e);
      EXPECT_EQ(rig_.commit(b, std::vector<ro::Row<int>>{ro::Row<int>(static_cast<int>(e))}),
                rd::CommitStatus::accepted);
    }
    for (const auto& [e, fate] : fates) {
      if (fate == Fate::suppressed) continue;
      rd::Invocation b = rig_.reserve(chain_.p_call);
      p_batch_.emplace(b.grains.at(0), b);
    }
  }

  // `value` is what P returns for a PRESENT or DROPPED fate.
  void resolve(std::uint32_t e, V value) {
    using Result = std::tuple<std::vector<ro::Row<V>>, std::vector<bool>>;
    rd::CommitStatus st = rd::CommitStatus::accepted;
    switch (fates_.at(e)) {
      case Fate::suppressed:
        st = rig_.commit(q_batch_.at(e), std::vector<ro::Row<int>>{ro::RecordFailure{q_cause(e)}});
        break;
      case Fate::present:
        st = rig_.commit(p_batch_.at(e), Result{{ro::Row<V>(value)}, {true}});
        break;
      case Fate::dropped:
        st = rig_.commit(p_batch_.at(e), Result{{ro::Row<V>(value)}, {false}});
        break;
      case Fate::failed:
        st = rig_.commit(p_batch_.at(e), Result{{ro::RecordFailure{p_cause(e)}}, {false}});
        break;
    }
    EXPECT_EQ(st, rd::CommitStatus::accepted);
  }

  std::string q_cause(std::uint32_t e) const { return tag_ + std::to_string(e) + "-q"; }
  std::string p_cause(std::uint32_t e) const { return tag_ + std::to_string(e) + "-p"; }
  // The cause the chain's final Item carries for a failing fate.
  std::string cause(std::uint32_t e) const {
    return fates_.at(e) == Fate::suppressed ? q_cause(e) : p_cause(e);
  }
  // The Item the chain's final Port must hold for a resolved Entity.
  std::string expected_item(std::uint32_t e) const {
    switch (fates_.at(e)) {
      case Fate::present:
        return "present";
      case Fate::dropped:
        return "dropped";
      case Fate::failed:
        return "failed(" + p_cause(e) + ")";
      case Fate::suppressed:
        return "suppressed(" + q_cause(e) + ")";
    }
    return "?";
  }

 private:
  EngineRig& rig_;
  Chain chain_;
  std::string tag_;
  std::map<std::uint32_t, Fate> fates_;
  std::map<std::uint32_t, rd::Invocation> q_batch_;
  std::map<std::uint32_t, rd::Invocation> p_batch_;
};

bool is_failing(Fate f) {
  return f == Fate::failed || f == Fate::suppressed;
}

std::string describe(const std::vector<Fate>& fates, const std::vector<int>& order) {
  std::string s = "fates [";
  for (Fate f : fates) s += std::string(fate_name(f)) + " ";
  s += "] order [";
  for (int i : order) s += std::to_string(i) + " ";
  return s + "]";
}

const std::vector<Fate> kAllFates = {Fate::present, Fate::dropped, Fate::failed, Fate::suppressed};

// ---- Grain lifecycle -------------------------------------------------------------------

TEST(GrainLifecycle, EveryPhaseEventPairFollowsTheDesignEdges) {
  const std::vector<GrainPhase> phases = {GrainPhase::waiting, GrainPhase::ready,
                                          GrainPhase::in_flight, GrainPhase::sealed};
  const std::vector<GrainEvent> events = {GrainEvent::inputs_ready, GrainEvent::inputs_terminal,
                                          GrainEvent::suppress,     GrainEvent::reserve,
                                          GrainEvent::commit,       GrainEvent::requeue};
  // DESIGN 5: WAITING -> READY (inputs present) -> IN_FLIGHT (reserved) -> SEALED (report
  // committed); WAITING -> SEALED (inputs terminal, or a barrier when they resolve);
  // READY -> SEALED (suppressed); IN_FLIGHT -> READY (retry); IN_FLIGHT -> SEALED also when a
  // failed batch or a barrier seals it. Nothing leaves SEALED.
  const std::map<std::pair<GrainPhase, GrainEvent>, GrainPhase> legal = {
      {{GrainPhase::waiting, GrainEvent::inputs_ready}, GrainPhase::ready},
      {{GrainPhase::waiting, GrainEvent::inputs_terminal}, GrainPhase::sealed},
      {{GrainPhase::waiting, GrainEvent::suppress}, GrainPhase::sealed},
      {{GrainPhase::ready, GrainEvent::reserve}, GrainPhase::in_flight},
      {{GrainPhase::ready, GrainEvent::suppress}, GrainPhase::sealed},
      {{GrainPhase::in_flight, GrainEvent::commit}, GrainPhase::sealed},
      {{GrainPhase::in_flight, GrainEvent::requeue}, GrainPhase::ready},
      {{GrainPhase::in_flight, GrainEvent::suppress}, GrainPhase::sealed},
  };
  int checked = 0;
  for (GrainPhase p : phases) {
    for (GrainEvent e : events) {
      const auto it = legal.find({p, e});
      const std::optional<GrainPhase> got = rd::grain_transition(p, e);
      SCOPED_TRACE(std::string(phase_name(p)) + " + event " + std::to_string(static_cast<int>(e)));
      if (it == legal.end()) {
        EXPECT_FALSE(got.has_value()) << "illegal edge accepted, leads to " << phase_name(*got);
      } else {
        ASSERT_TRUE(got.has_value()) << "legal edge rejected";
        EXPECT_EQ(*got, it->second);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 24);
}

// ---- Call input rule -------------------------------------------------------------------

// The rule of DESIGN 5 as a reference model over the resolved inputs. The deciding failure is
// the lowest-index failing input, so an input can decide only once every lower-index input
// is resolved; this keeps the cause independent of arrival order.
struct Verdict {
  bool decided = false;
  std::string item;  // the Call output's Item, "present" meaning the Grain is READY
};

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

template <int N>
void check_call_input_rule() {
  ro::Module<Q> q;
  ro::Module<P> p;
  ro::Module<Sum2> sum2;
  ro::Module<Sum3> sum3;
  std::vector<std::tuple<int, int, int>> ids;  // (q output, p value, filtered)
  int out_port = -1;
  auto program = ro::compile([&](ro::Port<int> x) {
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
  });
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
}

TEST(CallInputRule, TwoInputsEveryOutcomeInEveryArrivalOrder) {
  check_call_input_rule<2>();
}
TEST(CallInputRule, ThreeInputsEveryOutcomeInEveryArrivalOrder) {
  check_call_input_rule<3>();
}

// ---- Reduce ----------------------------------------------------------------------------

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
TEST(ReduceRule, EveryExpansionOutcomeMemberMixAndArrivalOrder) {
  ReduceProgram rp;
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

// ---- Filter ----------------------------------------------------------------------------

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

// ---- Broadcast -------------------------------------------------------------------------

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

// ---- Expand ----------------------------------------------------------------------------

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
