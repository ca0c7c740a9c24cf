// Randomized differential testing: how the generator grows Domains: filters, broadcasts,
// expands into child Domains and the reduces that gather them back (the Builder is declared
// in generator.h).
#pragma once

#include <utility>
#include <vector>

#include "support/random_pipeline/generator.h"

namespace random_pipeline {

inline void Builder::gen_filter(int domain) {
  const int mask = mask_port(domain);
  const int src = pick_i64(domain);
  ro::Port<i64> p = ro::F::filter(p64_.at(src), pbool_.at(mask));
  const int id = add_i64(domain, p);
  record_simple(OpKind::filter, {src, mask}, {id});
  i64s_[domain].push_back(id);
}

inline void Builder::gen_broadcast(int domain) {
  const int a = ancestor(domain);
  const int src = rs_.pick(i64s_[a]);
  const int like = pick_i64(domain);
  ro::Port<i64> p = ro::F::broadcast(p64_.at(src), p64_.at(like));
  const int id = add_i64(domain, p);
  record_simple(OpKind::broadcast, {src, like}, {id});
  i64s_[domain].push_back(id);
}

inline int Builder::new_domain(int parent) {
  ir_.domains.push_back(IrDomain{parent, ir_.domains[parent].depth + 1});
  i64s_.emplace_back();
  bools_.emplace_back();
  return static_cast<int>(ir_.domains.size()) - 1;
}

inline void Builder::gen_expand(int domain, int depth) {
  ++expands_;
  const int src = pick_i64(domain);
  std::vector<int> children;  // child Domains to fill and reduce
  if (rs_.chance(550)) {
    auto [m, index] = module<List1>(Udf::list1);
    CallSpec spec = make_spec(index, domain, true);
    ro::Port<std::vector<i64>> list = (*m)(p64_.at(src), spec);
    record_call(index, spec, {src});
    const int lid = add_list(domain, list);
    ir_.ops.back().out = {lid};
    const int c = new_domain(domain);
    ro::Port<i64> child =
        rs_.chance(150) ? std::get<0>(ro::F::expand_aligned(list)) : ro::F::expand(list);
    const int cid = add_i64(c, child);
    i64s_[c].push_back(cid);
    IrOp op;
    op.kind = OpKind::expand;
    op.in = {lid};
    op.out = {cid};
    op.domain = c;
    ir_.ops.push_back(op);
    children.push_back(c);
  } else {
    auto [m, index] = module<List2>(Udf::list2);
    CallSpec spec = make_spec(index, domain, true);
    auto [l1, l2, x] = (*m)(p64_.at(src), spec);
    record_call(index, spec, {src});
    const int id1 = add_list(domain, l1);
    const int id2 = add_list(domain, l2);
    const int ix = add_i64(domain, x);
    ir_.ops.back().out = {id1, id2, ix};
    i64s_[domain].push_back(ix);
    const int mode = rs_.weighted({70, 15, 15});
    if (mode == 0) {
      // One Expansion, two aligned child Ports.
      const int c = new_domain(domain);
      auto [c1, c2] = ro::F::expand_aligned(l1, l2);
      const int i1 = add_i64(c, c1);
      const int i2 = add_i64(c, c2);
      i64s_[c].push_back(i1);
      i64s_[c].push_back(i2);
      IrOp op;
      op.kind = OpKind::expand;
      op.in = {id1, id2};
      op.out = {i1, i2};
      op.domain = c;
      ir_.ops.push_back(op);
      children.push_back(c);
    } else {
      // Two separate expansions of one Call (mode 1), or only one of its lists (mode 2).
      const int n = mode == 1 ? 2 : 1;
      for (int k = 0; k < n; ++k) {
        const int c = new_domain(domain);
        const auto& l = k == 0 ? l2 : l1;
        ro::Port<i64> child = ro::F::expand(l);
        const int ci = add_i64(c, child);
        i64s_[c].push_back(ci);
        IrOp op;
        op.kind = OpKind::expand;
        op.in = {k == 0 ? id2 : id1};
        op.out = {ci};
        op.domain = c;
        ir_.ops.push_back(op);
        children.push_back(c);
      }
    }
  }
  for (int c : children) {
    gen_domain(c, depth + 1);
    const int reduces = rs_.weighted({5, 75, 20});  // 0: the child results are a dead end
    for (int r = 0; r < reduces; ++r) gen_reduce(c, domain);
  }
}

inline int Builder::members_port(int child) {
  if (!bools_[child].empty() && rs_.chance(400)) return rs_.pick(bools_[child]);
  return pick_i64(child);
}

// `value`: the (first) values Port, or -1 to pick one.
template <class M>
void Builder::reduce_with(int child, int parent, int kind, const M& members, int mid, int value) {
  if (kind <= 1) {
    const int v = value >= 0 ? value : pick_i64(child);
    ro::Port<ro::Group<i64>> g = [&] {
      if constexpr (std::is_same_v<M, std::nullptr_t>) {
        return ro::F::reduce(p64_.at(v));
      } else {
        return rs_.chance(500) ? ro::F::reduce(p64_.at(v), members)
                               : ro::F::reduce(p64_.at(v), ro::F::members(members));
      }
    }();
    const int gid = add_group(parent, g);
    record_simple(OpKind::reduce, {v}, {gid}, mid);
    fold1(parent, gid);
    return;
  }
  const int v1 = value >= 0 ? value : pick_i64(child);
  const int v2 = pick_i64(child);
  auto [g1, g2] = [&] {
    if constexpr (std::is_same_v<M, std::nullptr_t>) {
      return ro::F::reduce_aligned(p64_.at(v1), p64_.at(v2));
    } else {
      return ro::F::reduce_aligned(ro::F::members(members), p64_.at(v1), p64_.at(v2));
    }
  }();
  const int id1 = add_group(parent, g1);
  const int id2 = add_group(parent, g2);
  record_simple(OpKind::reduce, {v1, v2}, {id1, id2}, mid);
  if (rs_.chance(650)) {
    auto [m, index] = module<Fold2>(Udf::fold2);
    CallSpec spec = make_spec(index, parent, true);
    ro::Port<i64> out = (*m)(pgroup_.at(id1), pgroup_.at(id2), spec);
    record_call(index, spec, {id1, id2});
    const int id = add_i64(parent, out);
    ir_.ops.back().out = {id};
    i64s_[parent].push_back(id);
  } else {
    fold1(parent, id1);
    fold1(parent, id2);
  }
}

// A reduce whose membership leaves out the children that raised a GroupFailure (DESIGN 5:
// the GroupFailure still decides the parent's gathers). A new Call with GroupFailures on
// some children, a MaskExclude over the same input that is false exactly there, and a
// membership filtered by that mask; the values are the failing Call's output.
inline void Builder::gen_excluding_reduce(int child, int parent) {
  const int a = pick_i64(child);
  auto [m, index] = module<Op1>(Udf::op1);
  CallSpec spec = make_spec(index, child, true);
  spec.faults.group = rs_.range(100, 450);
  ro::Port<i64> out = (*m)(p64_.at(a), spec);
  record_call(index, spec, {a});
  const int v = add_i64(child, out);
  ir_.ops.back().out = {v};
  i64s_[child].push_back(v);
  auto [mm, mindex] = module<MaskExclude>(Udf::mask_exclude);
  CallSpec ms = make_spec(mindex, child, false);
  ms.exclude_seed = spec.seed;
  ms.exclude_faults = spec.faults;
  ro::Port<bool> mask = (*mm)(p64_.at(a), ms);
  record_call(mindex, ms, {a});
  const int mask_id = add_bool(child, mask);
  ir_.ops.back().out = {mask_id};
  // The membership: the input itself or another child Port, filtered by the mask.
  const int src = rs_.chance(600) ? a : pick_i64(child);
  ro::Port<i64> kept = ro::F::filter(p64_.at(src), pbool_.at(mask_id));
  const int kid = add_i64(child, kept);
  record_simple(OpKind::filter, {src, mask_id}, {kid});
  reduce_with(child, parent, rs_.chance(700) ? 1 : 3, p64_.at(kid), kid, v);
}

inline void Builder::gen_reduce(int child, int parent) {
  if (rs_.chance(220)) {
    gen_excluding_reduce(child, parent);
    return;
  }
  const int kind = rs_.weighted({40, 20, 25, 15});  // plain, members, aligned, aligned+members
  const bool with_members = kind == 1 || kind == 3;
  if (!with_members) {
    reduce_with(child, parent, kind == 0 ? 0 : 2, nullptr, -1);
    return;
  }
  const int mid = members_port(child);
  if (ir_.ports[mid].type == PortType::boolean) {
    reduce_with(child, parent, kind == 1 ? 1 : 3, pbool_.at(mid), mid);
  } else {
    reduce_with(child, parent, kind == 1 ? 1 : 3, p64_.at(mid), mid);
  }
}

inline void Builder::fold1(int domain, int group) {
  auto [m, index] = module<Fold1>(Udf::fold1);
  CallSpec spec = make_spec(index, domain, true);
  ro::Port<i64> out = (*m)(pgroup_.at(group), spec);
  record_call(index, spec, {group});
  const int id = add_i64(domain, out);
  ir_.ops.back().out = {id};
  i64s_[domain].push_back(id);
}

inline void Builder::gen_domain(int domain, int depth) {
  const int steps = domain == 0 ? rs_.range(1, 5) : rs_.range(0, 4);
  for (int s = 0; s < steps; ++s) {
    const bool can_expand =
        depth < config_.max_depth && expands_ < config_.max_expands && calls_ < config_.max_calls;
    const int k = rs_.weighted({calls_ < config_.max_calls ? 45 : 0, 15, domain != 0 ? 15 : 0,
                                can_expand ? (depth == 0 ? 35 : 20) : 0});
    switch (k) {
      case 0:
        gen_call(domain);
        break;
      case 1:
        gen_filter(domain);
        break;
      case 2:
        gen_broadcast(domain);
        break;
      default:
        gen_expand(domain, depth);
        break;
    }
  }
}

}  // namespace random_pipeline
