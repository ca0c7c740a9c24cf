// Randomized differential testing: how the reference interpreter evaluates expands, reduces
// (with the GroupFailure barriers that decide their parent's gathers, DESIGN 5), filters and
// broadcasts (Model is declared in model.h).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "support/random_pipeline/model.h"

namespace random_pipeline {

inline void Model::eval_expand(const IrOp& op) {
  const int pd = domain_of(op.in[0]);
  const int cd = op.domain;
  const std::size_t n = ents[pd].size();
  expands[cd].assign(n, Expansion{});
  for (int c : op.out) items[c].clear();
  for (std::size_t p = 0; p < n; ++p) {
    const Item& first = items[op.in[0]][p];
    Expansion& x = expands[cd][p];
    x.taint = first.taint;
    for (int l : op.in) x.taint = x.taint || items[l][p].taint;
    if (first.outcome == ro::Outcome::present) {
      x.state = 1;
      const std::size_t len = first.vec.size();
      for (int l : op.in) {
        if (items[l][p].vec.size() != len) throw std::logic_error("aligned lists differ in length");
      }
      for (std::size_t k = 0; k < len; ++k) {
        const auto id = static_cast<std::uint32_t>(ents[cd].size());
        ents[cd].push_back(Entity{static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(k),
                                  ents[pd][p].key + "/" + std::to_string(k),
                                  x.taint || ents[pd][p].taint});
        x.children.push_back(id);
        for (std::size_t s = 0; s < op.in.size(); ++s) {
          Item it;
          it.i = items[op.in[s]][p].vec[k];
          it.taint = ents[cd][id].taint;
          it.taint_other = it.taint;
          items[op.out[s]].push_back(std::move(it));
        }
      }
    } else if (first.outcome == ro::Outcome::dropped) {
      x.state = 2;
    } else {
      x.state = 3;
      x.causes = first.causes;
      x.any_cause = first.any_cause;
    }
  }
}

inline void Model::eval_reduce(const IrOp& op) {
  const int cd = domain_of(op.in[0]);
  const int pd = ir.domains[cd].parent;
  const std::size_t n = ents[pd].size();
  const int members = op.members >= 0 ? op.members : op.in[0];
  for (int o : op.out) items[o].assign(n, Item{});
  const std::vector<int> guards = guards_of(op, members);
  for (std::size_t p = 0; p < n; ++p) {
    const Expansion& x = expands[cd][p];
    Item r;
    if (x.state == 2) {
      r = non_present(ro::Outcome::dropped, {""}, false);
    } else if (x.state == 3) {
      r = non_present(ro::Outcome::suppressed, x.causes, x.any_cause);
    } else {
      r = settle(op, x, members);
      // A GroupFailure of a guard Call under this parent decides the group (DESIGN 5).
      const Barrier* certain = nullptr;
      bool possible = false;
      std::set<std::string> all;
      for (int g : guards) {
        const auto it = barriers_[g].find(static_cast<std::uint32_t>(p));
        if (it == barriers_[g].end()) continue;
        possible = true;
        all.insert(it->second.causes.begin(), it->second.causes.end());
        if (it->second.certain && certain == nullptr) certain = &it->second;
      }
      if (certain != nullptr && !(x.taint || ents[pd][p].taint)) {
        count_barrier_decision(op, members, guards, static_cast<std::uint32_t>(p), r);
        r = barrier_settle(op, x, members, all);
      } else if (possible && !r.taint && r.outcome == ro::Outcome::present) {
        // A barrier that may or may not be installed: the group or SUPPRESSED.
        r.taint = true;
        r.any_cause = true;
      }
    }
    if (x.taint || ents[pd][p].taint) {
      r.taint = true;
      r.any_cause = true;
    }
    r.taint_other = r.taint;  // a reduce's taint is foreign to the parent Domain's barriers
    for (std::size_t v = 0; v < op.out.size(); ++v) {
      items[op.out[v]][p] = r;
      if (r.outcome != ro::Outcome::present) continue;
      // A reduce of a reduce gathers the inner groups whole (DESIGN 5.4 at each level).
      if (ir.ports[op.in[v]].type == PortType::group) {
        items[op.out[v]][p].nested = r_nested_[v];
      } else {
        items[op.out[v]][p].vec = r_groups_[v];
      }
    }
  }
}

// The Calls of the reduce's child Domain upstream of its values or membership, through
// Calls and filters without leaving that Domain (as the compiler finds the guards).
inline std::vector<int> Model::guards_of(const IrOp& op, int members) const {
  const int cd = domain_of(op.in[0]);
  std::vector<int> ports(op.in.begin(), op.in.end());
  ports.push_back(members);
  std::vector<char> seen(ir.ports.size(), 0);
  std::vector<int> guards;
  while (!ports.empty()) {
    const int port = ports.back();
    ports.pop_back();
    if (seen[port] || domain_of(port) != cd || producer_[port] < 0) continue;
    seen[port] = 1;
    const IrOp& src = ir.ops[producer_[port]];
    if (src.kind == OpKind::call) {
      guards.push_back(producer_[port]);
      ports.insert(ports.end(), src.in.begin(), src.in.end());
    } else if (src.kind == OpKind::filter) {
      ports.insert(ports.end(), src.in.begin(), src.in.end());
    }
  }
  return guards;
}

// Whether child `c` makes the group SUPPRESSED for sure, wherever the scan reaches it: a
// failing member, or an included member with a value that is not PRESENT.
inline bool Model::certainly_suppresses(const IrOp& op, int members, std::uint32_t c) const {
  const Item& m = items[members][c];
  if (m.taint) return false;
  if (failing(m)) return true;
  if (m.outcome != ro::Outcome::present) return false;
  for (int v : op.in) {
    const Item& it = items[v][c];
    if (!it.taint && it.outcome != ro::Outcome::present) return true;
  }
  return false;
}

// The natural result: children in ordinal order, the first one found failing decides the
// group (and its cause); DROPPED members are left out.
inline Model::Item Model::natural_settle(const IrOp& op, const Expansion& x, int members) {
  r_groups_.assign(op.in.size(), {});
  r_nested_.assign(op.in.size(), {});
  const int cd = domain_of(op.in[0]);
  for (const std::uint32_t c : x.children) {
    const Item& m = items[members][c];
    if (failing(m)) return non_present(ro::Outcome::suppressed, m.causes, m.any_cause);
    if (m.outcome == ro::Outcome::dropped) continue;
    for (std::size_t v = 0; v < op.in.size(); ++v) {
      const Item& it = items[op.in[v]][c];
      if (it.outcome == ro::Outcome::dropped) {
        return non_present(
            ro::Outcome::suppressed,
            {fmt::format("member {} of a reduce group was dropped", ents[cd][c].key)}, false);
      }
      if (it.outcome != ro::Outcome::present) {
        return non_present(ro::Outcome::suppressed, it.causes, it.any_cause);
      }
    }
    for (std::size_t v = 0; v < op.in.size(); ++v) {
      const Item& it = items[op.in[v]][c];
      if (ir.ports[op.in[v]].type == PortType::group) {
        r_nested_[v].push_back(it.vec);
      } else {
        r_groups_[v].push_back(it.i);
      }
    }
  }
  return Item{};
}

// The natural result, tainted when a tainted Item comes before the decision. The scan
// cannot see past such an Item, but a later certain failure still fixes the outcome
// (though not the cause).
inline Model::Item Model::settle(const IrOp& op, const Expansion& x, int members) {
  Item natural = natural_settle(op, x, members);
  auto unknown_from = [&](std::size_t k) {
    for (std::size_t j = k; j < x.children.size(); ++j) {
      if (certainly_suppresses(op, members, x.children[j]))
        return non_present(ro::Outcome::suppressed, {}, true);
    }
    natural.taint = true;
    natural.any_cause = true;
    return natural;
  };
  for (std::size_t k = 0; k < x.children.size(); ++k) {
    const std::uint32_t c = x.children[k];
    const Item& m = items[members][c];
    if (m.taint) return unknown_from(k);
    if (failing(m)) return natural;
    if (m.outcome == ro::Outcome::dropped) continue;
    for (int v : op.in) {
      const Item& it = items[v][c];
      if (it.taint) return unknown_from(k);
      if (it.outcome != ro::Outcome::present) return natural;
    }
  }
  return natural;
}

inline void Model::eval_filter(const IrOp& op) {
  const int d = domain_of(op.out[0]);
  const std::size_t n = ents[d].size();
  items[op.out[0]].assign(n, Item{});
  for (std::size_t e = 0; e < n; ++e) {
    const Item& src = items[op.in[0]][e];
    const Item& mask = items[op.in[1]][e];
    Item r;
    if (src.outcome != ro::Outcome::present) {
      r = src;
    } else if (mask.outcome != ro::Outcome::present) {
      r = non_present(mask.outcome, mask.causes, mask.any_cause);
    } else if (mask.b) {
      r = src;
    } else {
      r = non_present(ro::Outcome::dropped, {""}, false);
    }
    // A non-PRESENT untainted source decides alone; otherwise any taint carries over.
    const bool decided_by_source = !src.taint && src.outcome != ro::Outcome::present;
    if (!decided_by_source && (src.taint || mask.taint)) {
      r.taint = true;
      r.any_cause = true;
      r.taint_other = (src.taint && src.taint_other) || (mask.taint && mask.taint_other);
    }
    items[op.out[0]][e] = std::move(r);
  }
}

inline void Model::eval_broadcast(const IrOp& op) {
  const int sd = domain_of(op.in[0]);
  const int td = domain_of(op.out[0]);
  const std::size_t n = ents[td].size();
  items[op.out[0]].assign(n, Item{});
  for (std::size_t e = 0; e < n; ++e) {
    const std::uint32_t a = ancestor_in(td, static_cast<std::uint32_t>(e), sd);
    Item r = items[op.in[0]][a];
    if (ents[td][e].taint) {
      r.taint = true;
      r.any_cause = true;
    }
    r.taint_other = r.taint;  // from an ancestor Domain
    items[op.out[0]][e] = std::move(r);
  }
}

inline void Model::count_barrier_decision(const IrOp& op, int members,
                                          const std::vector<int>& guards, std::uint32_t parent,
                                          const Item& natural) {
  ++barrier_decided;
  if (!natural.taint && natural.outcome == ro::Outcome::present) ++barrier_decided_natural_present;
  for (int g : guards) {
    const auto it = barriers_[g].find(parent);
    if (it == barriers_[g].end()) continue;
    for (std::uint32_t c : it->second.certain_children) {
      const Item& m = items[members][c];
      const bool left_out = !m.taint && m.outcome == ro::Outcome::dropped;
      bool values_fail = false;
      for (int v : op.in) values_fail = values_fail || failing(items[v][c]);
      if (left_out && values_fail) {
        ++barrier_decided_excluding;
        return;
      }
    }
  }
}

// The group of a parent under an installed barrier: SUPPRESSED. The member scan still runs
// first in ordinal order (DESIGN 5): a certain failure met before anything tainted decides
// the cause; an Item tainted only by this Domain's barriers may pass or be SUPPRESSED with
// one of their causes (`barrier`); past the scan the barrier's cause decides.
inline Model::Item Model::barrier_settle(const IrOp& op, const Expansion& x, int members,
                                         const std::set<std::string>& barrier) const {
  Item r = non_present(ro::Outcome::suppressed, {}, false);
  const int cd = domain_of(op.in[0]);
  auto open = [&] {
    r.any_cause = true;
    return r;
  };
  auto decided = [&](const Item& it) {
    r.causes.insert(it.causes.begin(), it.causes.end());
    r.any_cause = r.any_cause || it.any_cause;
    return r;
  };
  for (const std::uint32_t c : x.children) {
    const Item& m = items[members][c];
    if (m.taint) {
      if (m.taint_other) return open();
      r.causes.insert(barrier.begin(), barrier.end());
      if (failing(m)) return open();  // its natural cause is not tracked under taint
    } else if (failing(m)) {
      return decided(m);
    }
    if (m.outcome == ro::Outcome::dropped) continue;
    for (int v : op.in) {
      const Item& it = items[v][c];
      if (it.taint) {
        if (it.taint_other) return open();
        r.causes.insert(barrier.begin(), barrier.end());
        if (it.outcome != ro::Outcome::present) return open();
      } else if (it.outcome == ro::Outcome::dropped) {
        r.causes.insert(fmt::format("member {} of a reduce group was dropped", ents[cd][c].key));
        return r;
      } else if (it.outcome != ro::Outcome::present) {
        return decided(it);
      }
    }
  }
  r.causes.insert(barrier.begin(), barrier.end());
  return r;
}

}  // namespace random_pipeline
