// The input chains and reference-model pieces shared by the closed rule tables of the
// semantic runtime (tests/runtime/rule_*_test.cc): a Chain gives one input Port any of the
// four outcomes through real commits, and its ChainDriver delivers them in the order the
// test chooses.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/runtime_harness.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace runtime_test::rule_tables {

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

inline bool is_failing(Fate f) {
  return f == Fate::failed || f == Fate::suppressed;
}

inline std::string describe(const std::vector<Fate>& fates, const std::vector<int>& order) {
  std::string s = "fates [";
  for (Fate f : fates) s += std::string(fate_name(f)) + " ";
  s += "] order [";
  for (int i : order) s += std::to_string(i) + " ";
  return s + "]";
}

inline const std::vector<Fate> kAllFates = {Fate::present, Fate::dropped, Fate::failed,
                                            Fate::suppressed};

// What a reference model of a rule decides once some inputs are resolved: nothing yet, or
// the Item the rule's output takes.
struct Verdict {
  bool decided = false;
  std::string item;  // the Call output's Item, "present" meaning the Grain is READY
};

}  // namespace runtime_test::rule_tables
