// Value lifetime: engine-local blocks, their use counts, and releasing an Item's value as
// soon as no consumer needs it (DESIGN 6.2).
#include <stdexcept>

#include "runtime/engine.h"

namespace rayorch::detail {

std::int32_t Engine::new_block() {
  blocks_.push_back(BlockState{});
  rebuild_.lineage.emplace_back();
  rebuild_.lost.push_back(0);
  rebuild_.remade.push_back(0);
  return static_cast<std::int32_t>(blocks_.size()) - 1;
}

void Engine::make_live(std::int32_t block) {
  blocks_[block].live = true;
  ++live_blocks_;
}

void Engine::release_if_unused(std::int32_t block) {
  BlockState& b = blocks_[block];
  if (!b.live || b.uses > 0) return;
  b.live = false;
  --live_blocks_;
  StoreCommand c;
  c.kind = StoreCommand::Kind::release;
  c.block = block_id(block);
  store_commands_.push_back(std::move(c));
}

void Engine::drop_use(std::int32_t block) {
  BlockState& b = blocks_[block];
  if (b.uses == 0) throw std::logic_error("internal error: block use count underflow");
  --b.uses;
  release_if_unused(block);
}

// A PRESENT Item holds one use of its block until every consumer that reads its value is
// done with it: the consuming Grain is sealed, the expansion is decided, the parent's reduce
// is published, the filter's output is published, the root's outputs are materialised.
// Broadcast sources are kept until the input batch retires, because descendants keep
// appearing as deeper expansions resolve. Whether an Item is still needed is a pure
// function of the engine's state, so maybe_release may be called from every point where a
// consumer finishes and from fact processing; the kReleased flag makes it idempotent.

bool Engine::value_needed(int port, std::uint32_t entity) const {
  const PlanPort& pp = p_.ports[port];
  if (pp.is_output && !root_delivered_[root_of(pp.domain, entity)]) return true;
  for (const Consumer& c : pp.consumers) {
    switch (c.kind) {
      case ConsumerKind::call_input:
        if (grains_[c.op][entity].phase != GrainPhase::sealed) return true;
        break;
      case ConsumerKind::expand_list:
        if (expand_.expansions[p_.expands[c.op].child_domain][entity].state == 0) return true;
        break;
      case ConsumerKind::reduce_value:
      case ConsumerKind::reduce_member: {
        const std::uint32_t parent = parent_[pp.domain][entity];
        if (!reduce_.progress[c.op][parent].published) return true;
        break;
      }
      case ConsumerKind::filter_source:
        if (items_[p_.filters[c.op].output][entity].state == ItemState::unresolved) return true;
        break;
      case ConsumerKind::filter_mask:
        break;  // a mask is read through its boolean, never its value
      case ConsumerKind::broadcast_source:
        return true;
    }
  }
  return false;
}

void Engine::maybe_release(int port, std::uint32_t entity) {
  Item& it = items_[port][entity];
  if (it.block < 0 || (it.flags & kReleased) != 0) return;
  if (value_needed(port, entity)) return;
  it.flags |= kReleased;
  ++values_released_;
  drop_use(it.block);
}

void Engine::release_grain_inputs(int call, std::uint32_t entity) {
  for (int in : p_.calls[call].inputs) maybe_release(in, entity);
}

void Engine::release_reduce_members(int reduce, std::uint32_t parent) {
  const PlanReduce& pr = p_.reduces[reduce];
  const Expansion& x = expand_.expansions[pr.child_domain][parent];
  if (x.state != 1) return;
  for (std::uint32_t k = 0; k < x.count; ++k) {
    for (int v : pr.values) maybe_release(v, x.first + k);
    if (!pr.members_is_value) maybe_release(pr.members, x.first + k);
  }
}

}  // namespace rayorch::detail
