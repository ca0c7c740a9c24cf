// Randomized differential testing: the shapes the generator draws from a stream of its own
// (GenConfig::callless_permille, nested_gather_permille): programs without any Call, and
// gathers of gathers (F::reduce of an inner F::reduce's groups, two expand levels up). The
// structure stream never sees them, so a seed that draws neither keeps its program, and one
// that draws a gather of gathers keeps every operator it had, with the new ones appended
// (the Builder is declared in generator.h).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "support/random_pipeline/generator.h"
#include "support/random_pipeline/generator_domains.h"

namespace random_pipeline {

struct Builder::StreamSwap {
  explicit StreamSwap(Builder& b) : b_(b) { swap(); }
  ~StreamSwap() { swap(); }
  StreamSwap(const StreamSwap&) = delete;
  StreamSwap& operator=(const StreamSwap&) = delete;
  void swap() {
    std::swap(b_.rs_, b_.rx_);
    std::swap(b_.rsched_, b_.rxsched_);
  }
  Builder& b_;
};

// Nothing but sources: every executor must still admit, complete and deliver the rows with
// no Call, no pool and no actor to wait for.
inline int Builder::callless_output() {
  const int id = rx_.pick(i64s_[0]);
  ir_.outputs.push_back(id);
  return id;
}

inline void Builder::gen_nested_gathers(int* outputs, std::size_t n) {
  // The inner groups: group Ports below the root, each an inner reduce's result (or a filter
  // of one). A std::map keeps them in Port order, so the draw is deterministic.
  std::vector<int> inner;
  for (const auto& entry : pgroup_) {
    if (ir_.ports[entry.first].domain != 0) inner.push_back(entry.first);
  }
  if (inner.empty() || !rx_.chance(config_.nested_gather_permille)) return;
  StreamSwap swap(*this);
  std::vector<int> roots;
  const int gathers = rs_.range(1, 2);
  for (int k = 0; k < gathers; ++k) roots.push_back(nested_gather(rs_.pick(inner)));
  // At least one output reads a gather of gathers, so its value and outcome are compared.
  const std::size_t first = rs_.next() % n;
  for (std::size_t k = 0; k < n; ++k) {
    if (k != first && !rs_.chance(300)) continue;
    outputs[k] = rs_.pick(roots);
    ir_.outputs[k] = outputs[k];
  }
}

inline int Builder::nested_gather(int group) {
  const int child = ir_.ports[group].domain;
  const int parent = ir_.domains[child].parent;
  // The inner groups themselves, or only those a mask keeps: the others are DROPPED, left out
  // of the outer group unless a membership includes them (then it is SUPPRESSED).
  int values = group;
  if (rs_.chance(250)) {
    const int mask = mask_port(child);
    ro::Port<ro::Group<i64>> kept = ro::F::filter(pgroup_.at(group), pbool_.at(mask));
    values = add_group(child, kept);
    record_simple(OpKind::filter, {group, mask}, {values});
  }
  // A membership of the outer reduce: a child Port whose DROPPED or failing Items leave out or
  // SUPPRESS inner groups whatever they hold (and whose Calls guard the outer reduce).
  int mid = -1;
  ro::Port<ro::Group<ro::Group<i64>>> g = [&] {
    const ro::Port<ro::Group<i64>>& v = pgroup_.at(values);
    if (!rs_.chance(350)) return ro::F::reduce(v);
    mid = members_port(child);
    const bool wrapped = rs_.chance(500);
    if (ir_.ports[mid].type == PortType::boolean) {
      return wrapped ? ro::F::reduce(v, ro::F::members(pbool_.at(mid)))
                     : ro::F::reduce(v, pbool_.at(mid));
    }
    return wrapped ? ro::F::reduce(v, ro::F::members(p64_.at(mid)))
                   : ro::F::reduce(v, p64_.at(mid));
  }();
  const int nid = add_nested(parent, g);
  record_simple(OpKind::reduce, {values}, {nid}, mid);
  auto [m, index] = module<FoldNested>(Udf::fold_nested);
  CallSpec spec = make_spec(index, parent, true);
  ro::Port<i64> out = (*m)(pnested_.at(nid), spec);
  record_call(index, spec, {nid});
  int id = add_i64(parent, out);
  ir_.ops.back().out = {id};
  i64s_[parent].push_back(id);
  // Outputs live in the root Domain: a plain reduce and a Fold1 per level up.
  for (int d = parent; d != 0; d = ir_.domains[d].parent) {
    reduce_with(d, ir_.domains[d].parent, 0, nullptr, -1, id);
    id = i64s_[ir_.domains[d].parent].back();
  }
  return id;
}

}  // namespace random_pipeline
