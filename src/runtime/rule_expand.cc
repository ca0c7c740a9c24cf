// Structural rule: expand. Splits a list Item into the Entities of its child Domain once
// every aligned list is resolved (DESIGN 5). State: expand_ (Engine::ExpandState).
#include <fmt/format.h>

#include "runtime/engine.h"

namespace rayorch::detail {

void Engine::on_expand_list(int expand, std::uint32_t parent) {
  const PlanExpand& pe = p_.expands[expand];
  Expansion& x = expand_.expansions[pe.child_domain][parent];
  if (x.state != 0) return;
  // Aligned lists come from one Call and resolve together; wait until all have.
  for (int l : pe.lists) {
    if (items_[l][parent].state == ItemState::unresolved) return;
  }
  const Item& first = items_[pe.lists[0]][parent];
  if (first.state == ItemState::present) {
    const std::size_t n = expand_.splits[pe.lists[0]][parent].length;
    for (std::size_t i = 1; i < pe.lists.size(); ++i) {
      const std::size_t ni = expand_.splits[pe.lists[i]][parent].length;
      if (ni != n) {
        // Aligned expansions publish nothing unless every list has the same length.
        if (fatal_.empty()) {
          fatal_ = fmt::format(
              "F::expand_aligned lists of {} have different lengths for entity {}: p{} has {} "
              "elements but p{} has {}; return lists of equal length per row",
              p_.calls[pe.call].name, entity_key(pe.parent_domain, parent), pe.lists[0], n,
              pe.lists[i], ni);
        }
        return;
      }
    }
    x.state = 1;
    x.first = static_cast<std::uint32_t>(parent_[pe.child_domain].size());
    x.count = static_cast<std::uint32_t>(n);
    create_entities(pe.child_domain, x.count, parent);
    for (std::size_t i = 0; i < pe.lists.size(); ++i) {
      const ListSplit split = expand_.splits[pe.lists[i]][parent];
      for (std::uint32_t k = 0; k < x.count; ++k) {
        publish(pe.children[i], x.first + k, ItemState::present, split.block, split.offset + k, -1);
      }
      drop_use(split.block);  // the pending expansion's hold on the child block
    }
    // Broadcasts into the new Domain whose ancestor Item is already terminal.
    for (int b : p_.domains[pe.child_domain].broadcasts_into) {
      const PlanBroadcast& pb = p_.broadcasts[b];
      const std::uint32_t a = ancestor_in(pe.parent_domain, parent, pb.source_domain);
      if (items_[pb.source][a].state != ItemState::unresolved) {
        publish_broadcast_range(b, pe.child_domain, x.first, x.count);
      }
    }
  } else {
    x.state = first.state == ItemState::dropped ? 2 : 3;
    x.cause = first.cause;
  }
  if (below_.any) below_root_expanded(expand, parent);
  for (int l : pe.lists) maybe_release(l, parent);
  for (int r : p_.domains[pe.child_domain].reduces_of_children) {
    if (x.state == 2) {
      publish_reduce(r, parent, ItemState::dropped, -1);
    } else if (x.state == 3) {
      publish_reduce(r, parent, ItemState::suppressed, x.cause);
    } else {
      advance_reduce(r, parent);  // an empty expansion settles here
    }
  }
}

}  // namespace rayorch::detail
