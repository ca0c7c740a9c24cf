// Randomized differential testing: how the reference interpreter evaluates a Call, Grain by
// Grain, with the same value functions and faults as the UDFs (Model is declared in
// model.h).
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "support/random_pipeline/model.h"
#include <fmt/format.h>

namespace random_pipeline {

inline void Model::eval_call(const IrOp& op) {
  const int d = domain_of(op.out[0]);
  const std::size_t n = ents[d].size();
  const IrModule& mod = ir.modules[op.module];
  const Udf udf = mod.udf;
  for (int o : op.out) items[o].assign(n, Item{});
  // The Call input rule, per Grain.
  std::vector<char> ready(n, 0);
  std::vector<char> taint(n, 0);
  std::vector<char> taint_other(n, 0);
  std::vector<u64> hs(n, 0);
  for (std::size_t e = 0; e < n; ++e) {
    // The lowest-index failing input decides, so its cause does not depend on arrival order.
    // An untainted failing input makes the outcome certain; a tainted input before it may
    // fail first and leaves the cause open.
    bool taint_before = false, any_taint = false, other = false;
    const Item* certain = nullptr;
    for (int in : op.in) {
      const Item& it = items[in][e];
      if (it.taint) {
        any_taint = true;
        other = other || it.taint_other;
        if (certain == nullptr) taint_before = true;
      } else if (certain == nullptr && failing(it)) {
        certain = &it;
      }
    }
    if (certain != nullptr) {
      const Item r =
          non_present(ro::Outcome::suppressed, certain->causes, certain->any_cause || taint_before);
      for (int o : op.out) items[o][e] = r;
      continue;
    }
    // Otherwise the natural outcome, marked tainted when an input is. Taint only ever turns
    // Items into SUPPRESSED, so the naturally READY Grains are every Grain that may run: a
    // tainted one that would abort the run makes the abort possible, not certain.
    const Item* decider = nullptr;
    bool any_drop = false;
    for (int in : op.in) {
      const Item& it = items[in][e];
      if (decider == nullptr && failing(it)) decider = &it;
      if (it.outcome == ro::Outcome::dropped) any_drop = true;
    }
    if (decider != nullptr || any_drop) {
      Item r = decider != nullptr ? non_present(ro::Outcome::suppressed, decider->causes, true)
                                  : non_present(ro::Outcome::dropped, {""}, false);
      r.taint = any_taint;
      r.taint_other = other;
      r.any_cause = r.any_cause || any_taint;
      for (int o : op.out) items[o][e] = r;
      continue;
    }
    ready[e] = 1;
    taint[e] = any_taint ? 1 : 0;
    taint_other[e] = other ? 1 : 0;
    hs[e] = grain_hash(op, udf, e);
  }
  // GroupFailure barriers: keyed by the immediate parent, or the Grain itself at the root.
  std::map<std::uint32_t, std::vector<std::uint32_t>> groups;
  for (std::size_t e = 0; e < n; ++e) {
    if (!ready[e]) continue;
    const std::uint32_t key = d == 0 ? static_cast<std::uint32_t>(e) : ents[d][e].parent;
    groups[key].push_back(static_cast<std::uint32_t>(e));
  }
  for (const auto& [key, members] : groups) {
    std::vector<std::uint32_t> gfs;
    for (std::uint32_t e : members) {
      const Behavior b = classify(op.spec.faults, hs[e]);
      // A poisoned Grain throws before it can return its GroupFailure row.
      if (b.group && !b.poison) gfs.push_back(e);
    }
    if (gfs.empty()) continue;
    if (d != 0) {
      Barrier& bar = barriers_[current_op_][key];
      for (std::uint32_t e : gfs) {
        bar.causes.insert(group_message(op.spec.call, hs[e]));
        if (!taint[e]) {
          bar.certain = true;
          bar.certain_children.push_back(e);
        }
      }
    }
    const bool lone = gfs.size() == 1 && !taint[gfs[0]];
    for (std::uint32_t e : members) {
      if (!lone || e != gfs[0]) taint[e] = 1;
    }
  }
  for (std::size_t e = 0; e < n; ++e) {
    if (!ready[e]) continue;
    const u64 h = hs[e];
    const Behavior b = classify(op.spec.faults, h);
    const bool aborts =
        (b.poison && mod.recovery.kind() != ro::RecoveryPolicy::Kind::isolate_tail) ||
        (b.lost && mod.infra_retries == 0);
    if (aborts) {
      if (taint[e])
        possible_abort = true;
      else
        definite_abort = true;
    }
    std::vector<Item> outs(op.out.size());
    if (b.poison) {
      for (auto& it : outs)
        it = non_present(ro::Outcome::failed, {poison_cause(op.spec.call, h)}, false);
    } else if (b.group && udf != Udf::op1_plain && udf != Udf::mask_plain) {
      for (auto& it : outs)
        it = non_present(ro::Outcome::failed, {group_message(op.spec.call, h)}, false);
    } else if (b.record && udf != Udf::op1_plain && udf != Udf::mask_plain) {
      for (auto& it : outs)
        it = non_present(ro::Outcome::failed, {record_message(op.spec.call, h)}, false);
    } else {
      fill_values(op, udf, h, e, outs);
    }
    for (std::size_t k = 0; k < op.out.size(); ++k) {
      outs[k].taint = taint[e] != 0;
      outs[k].taint_other = taint_other[e] != 0;
      if (outs[k].taint) outs[k].any_cause = true;
      items[op.out[k]][e] = std::move(outs[k]);
    }
  }
}

inline u64 Model::grain_hash(const IrOp& op, Udf udf, std::size_t e) const {
  const u64 seed = op.spec.seed;
  auto v = [&](int k) { return items[op.in[k]][e].i; };
  switch (udf) {
    case Udf::fold1:
      return hash_group(seed, items[op.in[0]][e].vec);
    case Udf::fold2:
      return hash_group(hash_group(seed, items[op.in[0]][e].vec), items[op.in[1]][e].vec);
    case Udf::fold_nested:
      return hash_nested(seed, items[op.in[0]][e].nested);
    case Udf::op2:
    case Udf::op2x2:
      return hash_values(seed, {v(0), v(1)});
    case Udf::op3:
      return hash_values(seed, {v(0), v(1), v(2)});
    default:
      return hash_values(seed, {v(0)});
  }
}

inline void Model::fill_values(const IrOp& op, Udf udf, u64 h, std::size_t e,
                               std::vector<Item>& outs) const {
  switch (udf) {
    case Udf::split2:
    case Udf::op2x2:
      outs[0].i = out_value(h, 0);
      outs[1].i = out_value(h, 1);
      break;
    case Udf::list1:
      outs[0].vec = make_list(op.spec, h, 0);
      break;
    case Udf::list2:
      outs[0].vec = make_list(op.spec, h, 0);
      outs[1].vec = make_list(op.spec, h, 1);
      outs[2].i = out_value(h, 2);
      break;
    case Udf::mask_row:
    case Udf::mask_plain:
      outs[0].b = mask_value(op.spec, h);
      break;
    case Udf::mask_exclude:
      outs[0].b = !excluded(op.spec, items[op.in[0]][e].i);
      break;
    default:
      outs[0].i = out_value(h, 0);
      break;
  }
}

}  // namespace random_pipeline
