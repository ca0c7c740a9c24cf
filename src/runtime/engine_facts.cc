// Facts and lineage: Entities and their parents, publishing an Item's one terminal fact,
// draining facts to their consumers, and Entity keys (DESIGN 5).
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/engine.h"

namespace rayorch::detail {

std::int32_t Engine::intern(std::string cause, int call, std::uint32_t entity) {
  const std::uint32_t attempts = call >= 0 ? grains_[call][entity].generation + 1 : 0;
  causes_.push_back(Cause{std::move(cause), call, entity, attempts});
  return static_cast<std::int32_t>(causes_.size()) - 1;
}

void Engine::create_entities(int domain, std::uint32_t count, std::uint32_t parent) {
  auto& parents = parent_[domain];
  auto& ordinals = ordinal_[domain];
  const std::uint32_t first = static_cast<std::uint32_t>(parents.size());
  const std::uint32_t total = first + count;
  parents.resize(total, parent);
  ordinals.resize(total);
  for (std::uint32_t i = 0; i < count; ++i) ordinals[first + i] = domain == 0 ? first + i : i;
  if (below_.any) below_root_created(domain, first, count, parent);
  const PlanDomain& pd = p_.domains[domain];
  for (int port : pd.ports) {
    items_[port].resize(total);
    if (p_.ports[port].expanded_by >= 0) expand_.splits[port].resize(total);
  }
  if (domain > 0) {
    for (int call : pd.calls) {
      if (reduce_.guarded[call].empty()) continue;
      auto& unsealed = reduce_.unsealed[call];
      if (unsealed.size() <= parent) unsealed.resize(parent_[pd.parent].size(), 0);
      unsealed[parent] += count;
    }
  }
  for (int call : pd.calls) {
    Grain g;
    g.unresolved = static_cast<std::uint16_t>(call_inputs_[call]);
    grains_[call].resize(total, g);
    counters_[call].total += count;
    grains_total_ += count;
  }
  for (int child : child_domains_[domain]) expand_.expansions[child].resize(total);
  for (int r : reduce_.into[domain]) reduce_.progress[r].resize(total);
}

void Engine::publish(int port, std::uint32_t entity, ItemState state, std::int32_t block,
                     std::uint32_t row, std::int32_t cause, std::uint8_t flags) {
  Item& item = items_[port][entity];
  if (item.state != ItemState::unresolved) {
    if (item.state == state && item.block == block && item.row == row)
      return;  // the same fact again: no-op
    throw std::logic_error(
        fmt::format("internal error: conflicting facts for p{} at entity {} ({} then {})", port,
                    entity_key(p_.ports[port].domain, entity), static_cast<int>(item.state),
                    static_cast<int>(state)));
  }
  item.state = state;
  item.block = state == ItemState::present ? block : -1;
  item.row = row;
  item.flags = flags;
  if (item.block >= 0) ++blocks_[item.block].uses;
  item.cause = state == ItemState::dropped && cause < 0 ? -1 : cause;
  facts_.push_back(Fact{port, entity});
  const PlanPort& pp = p_.ports[port];
  if (pp.is_output) {
    if (pp.domain != 0) {
      below_root_output(port, entity);
    } else {
      // A port can be listed several times as an output; count each listing.
      for (int out : p_.outputs)
        if (out == port) root_output_resolved(entity);
    }
  }
}

void Engine::advance() {
  while (fact_head_ < facts_.size()) {
    const Fact f = facts_[fact_head_++];
    const PlanPort& pp = p_.ports[f.port];
    for (const Consumer& c : pp.consumers) {
      const Item item = items_[f.port][f.entity];
      switch (c.kind) {
        case ConsumerKind::call_input:
          on_call_input(c.op, f.entity, item);
          break;
        case ConsumerKind::expand_list:
          on_expand_list(c.op, f.entity);
          break;
        case ConsumerKind::reduce_value:
        case ConsumerKind::reduce_member:
          on_reduce_fact(c.op, f.entity);
          break;
        case ConsumerKind::filter_source:
        case ConsumerKind::filter_mask:
          on_filter(c.op, f.entity);
          break;
        case ConsumerKind::broadcast_source:
          on_broadcast_source(c.op, f.entity);
          break;
      }
    }
    // Consumers that finished before this fact arrived (or none at all) free it here.
    maybe_release(f.port, f.entity);
  }
  facts_.clear();
  fact_head_ = 0;
}

std::uint32_t Engine::ancestor_in(int domain, std::uint32_t entity, int ancestor_domain) const {
  while (domain != ancestor_domain) {
    entity = parent_[domain][entity];
    domain = p_.domains[domain].parent;
  }
  return entity;
}

std::uint64_t Engine::entity_path(int domain, std::uint32_t entity,
                                  std::span<std::uint32_t> ordinals, std::size_t& depth) const {
  depth = 0;
  while (domain > 0) {
    if (depth < ordinals.size()) ordinals[depth] = ordinal_[domain][entity];
    ++depth;
    entity = parent_[domain][entity];
    domain = p_.domains[domain].parent;
  }
  return options_.root_keys.empty() ? first_row_ + entity : options_.root_keys[entity];
}

std::string Engine::entity_key(int domain, std::uint32_t entity) const {
  std::vector<std::uint32_t> path;
  while (domain > 0) {
    path.push_back(ordinal_[domain][entity]);
    entity = parent_[domain][entity];
    domain = p_.domains[domain].parent;
  }
  std::string s =
      std::to_string(options_.root_keys.empty() ? first_row_ + entity : options_.root_keys[entity]);
  for (auto it = path.rbegin(); it != path.rend(); ++it) s += "/" + std::to_string(*it);
  return s;
}

}  // namespace rayorch::detail
