// Randomized differential testing: the reference interpreter. Model evaluates a generated
// program (support/random_pipeline/ir.h) on its source columns and says what every root
// output may be; model_calls.h and model_gathers.h define how it evaluates each operator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/random_pipeline/ir.h"

namespace random_pipeline {

// What a root output may be. `tainted`: schedule-dependent, not compared. Otherwise the
// outcome and value are exact and the cause must be one of `causes` (any cause when
// `any_cause`).
struct Expected {
  ro::Outcome outcome = ro::Outcome::present;
  i64 value = 0;
  std::set<std::string> causes;
  bool any_cause = false;
  bool tainted = false;
};

struct Model {
  struct Item {
    ro::Outcome outcome = ro::Outcome::present;
    i64 i = 0;
    bool b = false;
    std::vector<i64> vec;                  // lists and groups
    std::vector<std::vector<i64>> nested;  // groups of groups
    std::set<std::string> causes;
    bool any_cause = false;
    bool taint = false;
    // The taint may come from elsewhere than the GroupFailure barriers of this Domain's Calls
    // under the Item's parent (an ancestor's barrier through a broadcast, an expansion or a
    // reduce): where it then ends up SUPPRESSED, its cause is not known.
    bool taint_other = false;
  };
  // The GroupFailures of one Call under one parent Entity.
  struct Barrier {
    bool certain = false;          // an untainted READY Grain raises one: it is installed
    std::set<std::string> causes;  // the messages of every Grain that may raise one
    std::vector<std::uint32_t> certain_children;  // the untainted Grains that raise one
  };
  struct Entity {
    std::uint32_t parent = 0;
    std::uint32_t ordinal = 0;
    std::string key;
    bool taint = false;
  };
  struct Expansion {
    int state = 0;  // 1 succeeded, 2 dropped, 3 failed
    std::vector<std::uint32_t> children;
    std::set<std::string> causes;
    bool any_cause = false;
    bool taint = false;
  };

  const Ir& ir;
  std::vector<std::vector<Entity>> ents;        // per Domain
  std::vector<std::vector<Expansion>> expands;  // per child Domain, by parent Entity
  std::vector<std::vector<Item>> items;         // per Port
  bool definite_abort = false;
  bool possible_abort = false;
  // Reduces (per parent) that a GroupFailure of a guard Call decides SUPPRESSED (DESIGN 5),
  // those among them whose membership leaves a failing child out, and those whose natural
  // group (without the rule) would have been PRESENT.
  std::uint64_t barrier_decided = 0;
  std::uint64_t barrier_decided_excluding = 0;
  std::uint64_t barrier_decided_natural_present = 0;

  explicit Model(const Ir& program) : ir(program) {}

  // Evaluates the program on the source columns; returns [row][output].
  std::vector<std::vector<Expected>> run(const std::vector<std::vector<i64>>& sources) {
    const std::size_t rows = sources.empty() ? 0 : sources[0].size();
    ents.assign(ir.domains.size(), {});
    expands.assign(ir.domains.size(), {});
    items.assign(ir.ports.size(), {});
    barriers_.assign(ir.ops.size(), {});
    producer_.assign(ir.ports.size(), -1);
    for (std::size_t i = 0; i < ir.ops.size(); ++i) {
      for (int o : ir.ops[i].out) producer_[o] = static_cast<int>(i);
    }
    for (std::size_t r = 0; r < rows; ++r) {
      ents[0].push_back(Entity{0, static_cast<std::uint32_t>(r), std::to_string(r), false});
    }
    for (int s = 0; s < ir.sources; ++s) {
      auto& it = items[s];
      it.resize(rows);
      for (std::size_t r = 0; r < rows; ++r) it[r].i = sources[s][r];
    }
    for (const IrOp& op : ir.ops) {
      current_op_ = static_cast<int>(&op - ir.ops.data());
      switch (op.kind) {
        case OpKind::call:
          eval_call(op);
          break;
        case OpKind::expand:
          eval_expand(op);
          break;
        case OpKind::reduce:
          eval_reduce(op);
          break;
        case OpKind::filter:
          eval_filter(op);
          break;
        case OpKind::broadcast:
          eval_broadcast(op);
          break;
      }
    }
    std::vector<std::vector<Expected>> out(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      for (int o : ir.outputs) {
        const Item& it = items[o][r];
        Expected e;
        e.outcome = it.outcome;
        e.value = it.i;
        e.causes = it.causes;
        e.any_cause = it.any_cause;
        e.tainted = it.taint;
        out[r].push_back(std::move(e));
      }
    }
    return out;
  }

 private:
  static bool failing(const Item& it) {
    return it.outcome == ro::Outcome::failed || it.outcome == ro::Outcome::suppressed;
  }
  static Item non_present(ro::Outcome o, std::set<std::string> causes, bool any) {
    Item it;
    it.outcome = o;
    it.causes = std::move(causes);
    it.any_cause = any;
    return it;
  }
  int domain_of(int port) const { return ir.ports[port].domain; }

  std::uint32_t ancestor_in(int domain, std::uint32_t e, int target) const {
    while (domain != target) {
      e = ents[domain][e].parent;
      domain = ir.domains[domain].parent;
    }
    return e;
  }

  // Calls (support/random_pipeline/model_calls.h).
  void eval_call(const IrOp& op);
  u64 grain_hash(const IrOp& op, Udf udf, std::size_t e) const;
  void fill_values(const IrOp& op, Udf udf, u64 h, std::size_t e, std::vector<Item>& outs) const;

  // Expands, reduces, filters and broadcasts (support/random_pipeline/model_gathers.h).
  void eval_expand(const IrOp& op);
  void eval_reduce(const IrOp& op);
  // The Calls of the reduce's child Domain upstream of its values or membership, through
  // Calls and filters without leaving that Domain (as the compiler finds the guards).
  std::vector<int> guards_of(const IrOp& op, int members) const;
  // Whether child `c` makes the group SUPPRESSED for sure, wherever the scan reaches it: a
  // failing member, or an included member with a value that is not PRESENT.
  bool certainly_suppresses(const IrOp& op, int members, std::uint32_t c) const;
  // The natural result: children in ordinal order, the first one found failing decides the
  // group (and its cause); DROPPED members are left out.
  Item natural_settle(const IrOp& op, const Expansion& x, int members);
  // The natural result, tainted when a tainted Item comes before the decision. The scan
  // cannot see past such an Item, but a later certain failure still fixes the outcome
  // (though not the cause).
  Item settle(const IrOp& op, const Expansion& x, int members);
  void count_barrier_decision(const IrOp& op, int members, const std::vector<int>& guards,
                              std::uint32_t parent, const Item& natural);
  // The group of a parent under an installed barrier: SUPPRESSED. The member scan still runs
  // first in ordinal order (DESIGN 5): a certain failure met before anything tainted decides
  // the cause; an Item tainted only by this Domain's barriers may pass or be SUPPRESSED with
  // one of their causes (`barrier`); past the scan the barrier's cause decides.
  Item barrier_settle(const IrOp& op, const Expansion& x, int members,
                      const std::set<std::string>& barrier) const;
  void eval_filter(const IrOp& op);
  void eval_broadcast(const IrOp& op);

  std::vector<std::vector<i64>> r_groups_;  // the groups of the last settle(), per value Port
  std::vector<std::vector<std::vector<i64>>> r_nested_;     // ... of groups of groups
  std::vector<std::map<std::uint32_t, Barrier>> barriers_;  // per op (Calls): by parent key
  std::vector<int> producer_;                               // per Port: the op that makes it
  int current_op_ = -1;
};

}  // namespace random_pipeline
