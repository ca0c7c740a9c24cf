// Structural rule: reduce. Gathers a parent's children into one Group per value once their
// fates are known, in ordinal order (DESIGN 5). State: reduce_ (Engine::ReduceState).
#include <fmt/format.h>

#include "runtime/engine.h"
#include "runtime/engine_internal.h"

namespace rayorch::detail {

void Engine::publish_reduce(int reduce, std::uint32_t parent, ItemState state, std::int32_t cause) {
  ReduceProgress& rp = reduce_.progress[reduce][parent];
  if (rp.published) return;
  rp.published = true;
  for (int out : p_.reduces[reduce].outputs) publish_failure(out, parent, state, cause);
  release_reduce_members(reduce, parent);
}

void Engine::on_reduce_fact(int reduce, std::uint32_t child) {
  const PlanReduce& pr = p_.reduces[reduce];
  const std::uint32_t parent = parent_[pr.child_domain][child];
  if (reduce_.progress[reduce][parent].published) return;
  advance_reduce(reduce, parent);
}

// Moves the parent's cursor over children whose fate is known, in ordinal order. The first
// child found failing decides SUPPRESSED with its own cause, even while higher ordinals are
// still pending; a lower pending ordinal blocks the decision, so the cause is that of the
// lowest failing ordinal whatever the arrival order. The cursor only moves forward and each
// fact re-examines one child, so the work per (parent, reduce) is linear in its child facts.
void Engine::advance_reduce(int reduce, std::uint32_t parent) {
  const PlanReduce& pr = p_.reduces[reduce];
  const Expansion& x = expand_.expansions[pr.child_domain][parent];
  ReduceProgress& rp = reduce_.progress[reduce][parent];
  while (rp.cursor < x.count) {
    const std::uint32_t child = x.first + rp.cursor;
    const Item& m = items_[pr.members][child];
    if (m.state == ItemState::unresolved) return;
    if (is_failure(m.state)) {
      publish_reduce(reduce, parent, ItemState::suppressed, m.cause);
      return;
    }
    if (m.state == ItemState::present) {
      for (int v : pr.values) {
        if (items_[v][child].state == ItemState::unresolved) return;
      }
      for (int v : pr.values) {
        const Item& it = items_[v][child];
        if (it.state == ItemState::present) continue;
        // Every included value must be present.
        publish_reduce(reduce, parent, ItemState::suppressed,
                       it.cause >= 0 ? it.cause
                                     : intern(fmt::format("member {} of a reduce group was {}",
                                                          entity_key(pr.child_domain, child),
                                                          to_string(to_outcome(it.state)))));
        return;
      }
    }
    ++rp.cursor;  // DROPPED members are left out
  }
  // No member decided SUPPRESSED. Which siblings of a GroupFailure committed before it
  // depends on timing, so the GroupFailure decides the group (DESIGN 5): a PRESENT group
  // waits until every Grain of the guard Calls under the parent is sealed, and is
  // SUPPRESSED with the cause of a GroupFailure among them (lowest Call index first).
  for (int g : pr.guards) {
    if (parent < reduce_.unsealed[g].size() && reduce_.unsealed[g][parent] > 0) return;
  }
  for (int g : pr.guards) {
    if (parent < barriers_[g].size() && barriers_[g][parent] >= 0) {
      publish_reduce(reduce, parent, ItemState::suppressed, barriers_[g][parent]);
      return;
    }
  }
  settle_reduce(reduce, parent);
}

void Engine::settle_reduce(int reduce, std::uint32_t parent) {
  const PlanReduce& pr = p_.reduces[reduce];
  const Expansion& x = expand_.expansions[pr.child_domain][parent];
  const std::size_t nv = pr.values.size();
  // The store composes each group from the members' bindings (it holds their blocks), so
  // the members' own Items are released right after.
  for (std::size_t v = 0; v < nv; ++v) {
    StoreCommand c;
    c.kind = StoreCommand::Kind::compose_group;
    c.reduce = reduce;
    c.value = static_cast<int>(v);
    for (std::uint32_t k = 0; k < x.count; ++k) {
      const std::uint32_t child = x.first + k;
      if (items_[pr.members][child].state != ItemState::present) continue;
      const Item& it = items_[pr.values[v]][child];
      c.members.push_back(bound(it.block, it.row));
    }
    const std::int32_t block = new_block();
    make_live(block);
    rebuild_.lineage[block] =
        BlockLineage{BlockLineage::Kind::group, static_cast<std::uint32_t>(reduce),
                     static_cast<std::uint32_t>(v), parent};
    c.block = block_id(block);
    store_commands_.push_back(std::move(c));
    publish(pr.outputs[v], parent, ItemState::present, block, 0, -1);
  }
  reduce_.progress[reduce][parent].published = true;
  release_reduce_members(reduce, parent);
}

}  // namespace rayorch::detail
