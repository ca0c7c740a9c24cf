// The per-input-batch semantic engine. See engine.h and DESIGN 5.
#include "runtime/engine.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "rayorch/errors.h"

namespace rayorch::detail {

namespace {
constexpr std::uint32_t kNone = 0xFFFFFFFFu;

Outcome to_outcome(ItemState s) {
  switch (s) {
    case ItemState::present:
      return Outcome::present;
    case ItemState::dropped:
      return Outcome::dropped;
    case ItemState::failed:
      return Outcome::failed;
    default:
      return Outcome::suppressed;
  }
}

bool is_failure(ItemState s) {
  return s == ItemState::failed || s == ItemState::suppressed;
}
}  // namespace

std::optional<GrainPhase> grain_transition(GrainPhase phase, GrainEvent event) {
  switch (phase) {
    case GrainPhase::waiting:
      if (event == GrainEvent::inputs_ready) return GrainPhase::ready;
      if (event == GrainEvent::inputs_terminal) return GrainPhase::sealed;
      if (event == GrainEvent::suppress) return GrainPhase::sealed;
      return std::nullopt;
    case GrainPhase::ready:
      if (event == GrainEvent::reserve) return GrainPhase::in_flight;
      if (event == GrainEvent::suppress) return GrainPhase::sealed;
      return std::nullopt;
    case GrainPhase::in_flight:
      if (event == GrainEvent::commit) return GrainPhase::sealed;
      if (event == GrainEvent::requeue) return GrainPhase::ready;
      if (event == GrainEvent::suppress) return GrainPhase::sealed;
      return std::nullopt;
    case GrainPhase::sealed:
      return std::nullopt;
  }
  return std::nullopt;
}

Engine::Engine(std::shared_ptr<const RuntimePlan> plan, EngineOptions options,
               std::size_t first_row, std::size_t rows,
               const std::vector<std::vector<std::uint8_t>>& source_truth)
    : plan_(std::move(plan)), p_(*plan_), options_(options), first_row_(first_row), rows_(rows) {
  const std::size_t nd = p_.domains.size();
  parent_.resize(nd);
  ordinal_.resize(nd);
  child_domains_.resize(nd);
  reduces_into_.resize(nd);
  for (std::size_t d = 1; d < nd; ++d)
    child_domains_[p_.domains[d].parent].push_back(static_cast<int>(d));
  guarded_reduces_.resize(p_.calls.size());
  unsealed_.resize(p_.calls.size());
  for (std::size_t r = 0; r < p_.reduces.size(); ++r) {
    reduces_into_[p_.reduces[r].parent_domain].push_back(static_cast<int>(r));
    for (int g : p_.reduces[r].guards) guarded_reduces_[g].push_back(static_cast<int>(r));
  }
  items_.resize(p_.ports.size());
  expansions_.resize(nd);
  reduce_progress_.resize(p_.reduces.size());
  grains_.resize(p_.calls.size());
  barriers_.resize(p_.calls.size());
  queues_.resize(p_.calls.size());
  counters_.resize(p_.calls.size());
  call_inputs_.resize(p_.calls.size());
  for (std::size_t c = 0; c < p_.calls.size(); ++c) call_inputs_[c] = p_.calls[c].inputs.size();
  root_outputs_resolved_.assign(rows, 0);
  root_delivered_.assign(rows, 0);
  splits_.resize(p_.ports.size());

  create_entities(0, static_cast<std::uint32_t>(rows), kNone);
  for (std::size_t s = 0; s < p_.sources.size(); ++s) {
    const std::int32_t block = new_block();  // source column s is local block s
    make_live(block);
    const int port = p_.sources[s];
    const bool truth = p_.ports[port].needs_truth;
    if (truth && (s >= source_truth.size() || source_truth[s].size() != rows)) {
      throw std::logic_error(fmt::format(
          "internal error: source column {} feeds a mask but its booleans were not given", s));
    }
    for (std::size_t r = 0; r < rows; ++r) {
      const std::uint8_t flags = truth && source_truth[s][r] ? kTruth : 0;
      publish(port, static_cast<std::uint32_t>(r), ItemState::present, block,
              static_cast<std::uint32_t>(r), -1, flags);
    }
    release_if_unused(block);
  }
}

Engine::~Engine() = default;

std::int32_t Engine::intern(std::string cause, int call, std::uint32_t entity) {
  const std::uint32_t attempts = call >= 0 ? grains_[call][entity].generation + 1 : 0;
  causes_.push_back(Cause{std::move(cause), call, entity, attempts});
  return static_cast<std::int32_t>(causes_.size()) - 1;
}

std::int32_t Engine::new_block() {
  blocks_.push_back(BlockState{});
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

// ---- Value lifetime -------------------------------------------------------------------
//
// A PRESENT Item holds one use of its block until every consumer that reads its value is
// done with it: the consuming Grain is sealed, the expansion is decided, the parent's reduce
// is published, the filter's output is published, the root's outputs are materialised.
// Broadcast sources are kept until the input batch retires, because descendants keep
// appearing as deeper expansions resolve. Whether an Item is still needed is a pure
// function of the engine's state, so maybe_release may be called from every point where a
// consumer finishes and from fact processing; the kReleased flag makes it idempotent.

bool Engine::value_needed(int port, std::uint32_t entity) const {
  const PlanPort& pp = p_.ports[port];
  if (pp.is_output && pp.domain == 0 && !root_delivered_[entity]) return true;
  for (const Consumer& c : pp.consumers) {
    switch (c.kind) {
      case ConsumerKind::call_input:
        if (grains_[c.op][entity].phase != GrainPhase::sealed) return true;
        break;
      case ConsumerKind::expand_list:
        if (expansions_[p_.expands[c.op].child_domain][entity].state == 0) return true;
        break;
      case ConsumerKind::reduce_value:
      case ConsumerKind::reduce_member: {
        const std::uint32_t parent = parent_[pp.domain][entity];
        if (!reduce_progress_[c.op][parent].published) return true;
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
  drop_use(it.block);
}

void Engine::release_grain_inputs(int call, std::uint32_t entity) {
  for (int in : p_.calls[call].inputs) maybe_release(in, entity);
}

void Engine::release_reduce_members(int reduce, std::uint32_t parent) {
  const PlanReduce& pr = p_.reduces[reduce];
  const Expansion& x = expansions_[pr.child_domain][parent];
  if (x.state != 1) return;
  for (std::uint32_t k = 0; k < x.count; ++k) {
    for (int v : pr.values) maybe_release(v, x.first + k);
    if (!pr.members_is_value) maybe_release(pr.members, x.first + k);
  }
}

void Engine::create_entities(int domain, std::uint32_t count, std::uint32_t parent) {
  auto& parents = parent_[domain];
  auto& ordinals = ordinal_[domain];
  const std::uint32_t first = static_cast<std::uint32_t>(parents.size());
  const std::uint32_t total = first + count;
  parents.resize(total, parent);
  ordinals.resize(total);
  for (std::uint32_t i = 0; i < count; ++i) ordinals[first + i] = domain == 0 ? first + i : i;
  const PlanDomain& pd = p_.domains[domain];
  for (int port : pd.ports) {
    items_[port].resize(total);
    if (p_.ports[port].expanded_by >= 0) splits_[port].resize(total);
  }
  if (domain > 0) {
    for (int call : pd.calls) {
      if (guarded_reduces_[call].empty()) continue;
      auto& unsealed = unsealed_[call];
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
  for (int child : child_domains_[domain]) expansions_[child].resize(total);
  for (int r : reduces_into_[domain]) reduce_progress_[r].resize(total);
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
  if (pp.is_output && pp.domain == 0) {
    // A port can be listed several times as an output; count each listing.
    for (int out : p_.outputs) {
      if (out == port && ++root_outputs_resolved_[entity] == p_.outputs.size()) {
        finished_roots_.push_back(entity);
        ++roots_finished_;
      }
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

// ---- Grains ---------------------------------------------------------------------------

std::uint32_t Engine::barrier_key(int call, std::uint32_t entity) const {
  const PlanCall& pc = p_.calls[call];
  return pc.barrier_domain == pc.domain ? entity : parent_[pc.domain][entity];
}

std::int32_t Engine::barrier_cause(int call, std::uint32_t entity) const {
  const auto& b = barriers_[call];
  const std::uint32_t key = barrier_key(call, entity);
  return key < b.size() ? b[key] : -1;
}

void Engine::set_barrier(int call, std::uint32_t entity, std::int32_t cause) {
  auto& b = barriers_[call];
  const std::uint32_t key = barrier_key(call, entity);
  if (key >= b.size()) b.resize(parent_[p_.calls[call].barrier_domain].size(), -1);
  if (b[key] < 0) b[key] = cause;  // the first GroupFailure's cause is kept
}

void Engine::move_grain(int call, std::uint32_t entity, GrainEvent event) {
  Grain& g = grains_[call][entity];
  const std::optional<GrainPhase> next = grain_transition(g.phase, event);
  if (!next) {
    throw std::logic_error(
        fmt::format("internal error: illegal Grain transition of {} at {}: "
                    "phase {} cannot take event {}",
                    p_.calls[call].name, entity_key(p_.calls[call].domain, entity),
                    static_cast<int>(g.phase), static_cast<int>(event)));
  }
  g.phase = *next;
}

void Engine::seal_grain(int call, std::uint32_t entity, ItemState outputs_state, std::int32_t cause,
                        GrainEvent event) {
  move_grain(call, entity, event);
  for (int out : p_.calls[call].outputs) publish_failure(out, entity, outputs_state, cause);
  grain_sealed(call, entity);
}

void Engine::grain_sealed(int call, std::uint32_t entity) {
  ++grains_sealed_;
  ++counters_[call].sealed;
  release_grain_inputs(call, entity);
  if (guarded_reduces_[call].empty()) return;
  const std::uint32_t parent = parent_[p_.calls[call].domain][entity];
  // The last Grain of a guard Call under this parent: a waiting group may be decided now.
  if (--unsealed_[call][parent] > 0) return;
  for (int r : guarded_reduces_[call]) {
    if (!reduce_progress_[r][parent].published &&
        expansions_[p_.reduces[r].child_domain][parent].state == 1)
      advance_reduce(r, parent);
  }
}

void Engine::seal_suppressed_by_barrier(int call, std::uint32_t entity) {
  ++counters_[call].suppressed_by_barrier;
  seal_grain(call, entity, ItemState::suppressed, barrier_cause(call, entity),
             GrainEvent::suppress);
}

void Engine::on_call_input(int call, std::uint32_t entity, const Item& item) {
  Grain& g = grains_[call][entity];
  if (g.phase == GrainPhase::sealed) return;
  --g.unresolved;
  if (item.state == ItemState::dropped) g.has_drop = true;
  if (is_failure(item.state)) g.has_failure = true;
  if (g.has_failure) {
    // Rule 1. The deciding input is the lowest-index failed one, so its cause does not
    // depend on arrival order: decide as soon as every lower-index input is resolved.
    for (int in : p_.calls[call].inputs) {
      const Item& it = items_[in][entity];
      if (it.state == ItemState::unresolved) return;
      if (is_failure(it.state)) {
        seal_grain(call, entity, ItemState::suppressed, it.cause, GrainEvent::inputs_terminal);
        return;
      }
    }
  }
  if (g.unresolved > 0) return;  // Rule 2: wait.
  if (g.has_drop) {
    // Rule 3: the UDF is not called.
    seal_grain(call, entity, ItemState::dropped, -1, GrainEvent::inputs_terminal);
    return;
  }
  if (barrier_cause(call, entity) >= 0) {
    seal_suppressed_by_barrier(call, entity);
    return;
  }
  move_grain(call, entity, GrainEvent::inputs_ready);  // Rule 4.
  queues_[call].ready.push_back(entity);
}

// ---- Expand ---------------------------------------------------------------------------

void Engine::on_expand_list(int expand, std::uint32_t parent) {
  const PlanExpand& pe = p_.expands[expand];
  Expansion& x = expansions_[pe.child_domain][parent];
  if (x.state != 0) return;
  // Aligned lists come from one Call and resolve together; wait until all have.
  for (int l : pe.lists) {
    if (items_[l][parent].state == ItemState::unresolved) return;
  }
  const Item& first = items_[pe.lists[0]][parent];
  if (first.state == ItemState::present) {
    const std::size_t n = splits_[pe.lists[0]][parent].length;
    for (std::size_t i = 1; i < pe.lists.size(); ++i) {
      const std::size_t ni = splits_[pe.lists[i]][parent].length;
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
      const ListSplit split = splits_[pe.lists[i]][parent];
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

// ---- Reduce ---------------------------------------------------------------------------

void Engine::publish_reduce(int reduce, std::uint32_t parent, ItemState state, std::int32_t cause) {
  ReduceProgress& rp = reduce_progress_[reduce][parent];
  if (rp.published) return;
  rp.published = true;
  for (int out : p_.reduces[reduce].outputs) publish_failure(out, parent, state, cause);
  release_reduce_members(reduce, parent);
}

void Engine::on_reduce_fact(int reduce, std::uint32_t child) {
  const PlanReduce& pr = p_.reduces[reduce];
  const std::uint32_t parent = parent_[pr.child_domain][child];
  if (reduce_progress_[reduce][parent].published) return;
  advance_reduce(reduce, parent);
}

// Moves the parent's cursor over children whose fate is known, in ordinal order. The first
// child found failing decides SUPPRESSED with its own cause, even while higher ordinals are
// still pending; a lower pending ordinal blocks the decision, so the cause is that of the
// lowest failing ordinal whatever the arrival order. The cursor only moves forward and each
// fact re-examines one child, so the work per (parent, reduce) is linear in its child facts.
void Engine::advance_reduce(int reduce, std::uint32_t parent) {
  const PlanReduce& pr = p_.reduces[reduce];
  const Expansion& x = expansions_[pr.child_domain][parent];
  ReduceProgress& rp = reduce_progress_[reduce][parent];
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
    if (parent < unsealed_[g].size() && unsealed_[g][parent] > 0) return;
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
  const Expansion& x = expansions_[pr.child_domain][parent];
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
      c.members.push_back(Binding{block_id(it.block), it.row});
    }
    const std::int32_t block = new_block();
    make_live(block);
    c.block = block_id(block);
    store_commands_.push_back(std::move(c));
    publish(pr.outputs[v], parent, ItemState::present, block, 0, -1);
  }
  reduce_progress_[reduce][parent].published = true;
  release_reduce_members(reduce, parent);
}

// ---- Filter ---------------------------------------------------------------------------

void Engine::on_filter(int filter, std::uint32_t entity) {
  const PlanFilter& pf = p_.filters[filter];
  const Item& out = items_[pf.output][entity];
  if (out.state != ItemState::unresolved) return;
  const Item& src = items_[pf.source][entity];
  if (src.state == ItemState::unresolved) return;
  if (src.state != ItemState::present) {
    publish_failure(pf.output, entity, src.state, src.cause);
  } else {
    const Item& mask = items_[pf.mask][entity];
    if (mask.state == ItemState::unresolved) return;
    if (mask.state != ItemState::present) {
      publish_failure(pf.output, entity, mask.state, mask.cause);
    } else if ((mask.flags & kTruth) != 0) {
      publish(pf.output, entity, ItemState::present, src.block, src.row, -1, src.flags & kTruth);
    } else {
      publish_failure(pf.output, entity, ItemState::dropped, -1);
    }
  }
  maybe_release(pf.source, entity);
  maybe_release(pf.mask, entity);
}

// ---- Broadcast ------------------------------------------------------------------------

std::uint32_t Engine::ancestor_in(int domain, std::uint32_t entity, int ancestor_domain) const {
  while (domain != ancestor_domain) {
    entity = parent_[domain][entity];
    domain = p_.domains[domain].parent;
  }
  return entity;
}

void Engine::publish_broadcast_range(int broadcast, int domain, std::uint32_t first,
                                     std::uint32_t count) {
  if (count == 0) return;  // an empty Expansion has no child to read the parent from
  const PlanBroadcast& pb = p_.broadcasts[broadcast];
  // `first` is an Entity of `domain`; ancestor_in walks up from there.
  const std::uint32_t a = ancestor_in(domain, first, pb.source_domain);
  const Item src = items_[pb.source][a];
  for (std::uint32_t k = 0; k < count; ++k) {
    publish(pb.output, first + k, src.state, src.block, src.row, src.cause, src.flags & kTruth);
  }
}

void Engine::on_broadcast_source(int broadcast, std::uint32_t ancestor) {
  const PlanBroadcast& pb = p_.broadcasts[broadcast];
  // The Domain path from the source Domain down to the target Domain.
  std::vector<int> path;
  for (int d = pb.target_domain; d != pb.source_domain; d = p_.domains[d].parent) path.push_back(d);
  std::reverse(path.begin(), path.end());
  // Iterative walk over Expansion facts; memory O(depth).
  struct Frame {
    std::uint32_t next;
    std::uint32_t end;
  };
  std::vector<Frame> stack;
  stack.reserve(path.size());
  auto push_children = [&](std::size_t level, std::uint32_t entity) {
    const Expansion& x = expansions_[path[level]][entity];
    if (x.state == 1)
      stack.push_back(Frame{x.first, x.first + x.count});
    else
      stack.push_back(Frame{0, 0});
  };
  push_children(0, ancestor);
  while (!stack.empty()) {
    const std::size_t level = stack.size() - 1;
    Frame& f = stack.back();
    if (level + 1 == path.size()) {
      if (f.end > f.next) publish_broadcast_range(broadcast, path[level], f.next, f.end - f.next);
      stack.pop_back();
      continue;
    }
    if (f.next == f.end) {
      stack.pop_back();
      continue;
    }
    const std::uint32_t e = f.next++;
    push_children(level + 1, e);
  }
}

// ---- Dispatch -------------------------------------------------------------------------

bool Engine::has_work(int call) const {
  const CallQueues& q = queues_[call];
  return !q.ready.empty() || !q.immediate.empty() || !q.deferred.empty();
}

std::size_t Engine::ready_count(int call) const {
  const CallQueues& q = queues_[call];
  std::size_t n = q.ready.size();
  for (const auto& b : q.immediate) n += b.grains.size();
  for (const auto& b : q.deferred) n += b.grains.size();
  return n;
}

std::vector<std::uint32_t> Engine::take_live(int call, const std::vector<std::uint32_t>& grains,
                                             const std::vector<std::uint32_t>* generations) {
  std::vector<std::uint32_t> live;
  live.reserve(grains.size());
  for (std::size_t i = 0; i < grains.size(); ++i) {
    const std::uint32_t e = grains[i];
    Grain& g = grains_[call][e];
    const GrainPhase expected = generations ? GrainPhase::in_flight : GrainPhase::ready;
    if (g.phase != expected) continue;
    if (generations && g.generation != (*generations)[i]) continue;
    if (barrier_cause(call, e) >= 0) {
      seal_suppressed_by_barrier(call, e);
      continue;
    }
    live.push_back(e);
  }
  return live;
}

Invocation Engine::make_reservation(int call, std::vector<std::uint32_t> grains,
                                    std::uint16_t retries_used, bool tail_used) {
  const PlanCall& pc = p_.calls[call];
  Invocation r;
  r.id = next_batch_id_++;
  r.input_batch = options_.batch_index;
  r.call = call;
  r.generations.reserve(grains.size());
  r.inputs.assign(pc.inputs.size(), {});
  for (auto& column : r.inputs) column.reserve(grains.size());
  for (std::uint32_t e : grains) {
    move_grain(call, e, GrainEvent::reserve);
    r.generations.push_back(grains_[call][e].generation);
    for (std::size_t i = 0; i < pc.inputs.size(); ++i) {
      const Item& it = items_[pc.inputs[i]][e];
      r.inputs[i].push_back(Binding{block_id(it.block), it.row});
    }
  }
  r.outputs.reserve(pc.outputs.size());
  for (int out : pc.outputs) {
    const PlanPort& pp = p_.ports[out];
    OutputSlot slot;
    slot.block = block_id(new_block());
    if (pp.expanded_by >= 0) slot.child_block = block_id(new_block());
    slot.truth = pp.needs_truth;
    r.outputs.push_back(slot);
  }
  r.grains = std::move(grains);
  in_flight_.emplace(r.id,
                     InFlight{call, r.grains, r.generations, r.outputs, retries_used, tail_used});
  return r;
}

std::optional<Invocation> Engine::reserve(int call) {
  CallQueues& q = queues_[call];
  const PlanCall& pc = p_.calls[call];
  const std::size_t limit = static_cast<std::size_t>(pc.batch_size);
  // 1. Immediate retries, served before READY work.
  while (!q.immediate.empty()) {
    RecoveryBatch b = std::move(q.immediate.front());
    q.immediate.pop_front();
    auto live = take_live(call, b.grains, nullptr);
    if (!live.empty()) return make_reservation(call, std::move(live), b.retries_used, b.tail_used);
  }
  // 2. READY work.
  const Reservation policy = options_.reservation.value_or(p_.pools[pc.pool].options.reservation);
  const bool lifo = options_.queue_order == QueueOrder::lifo;
  std::vector<std::uint32_t> picked;
  if (policy == Reservation::elastic) {
    while (!q.ready.empty() && picked.size() < limit) {
      const std::uint32_t e = lifo ? q.ready.back() : q.ready.front();
      if (lifo)
        q.ready.pop_back();
      else
        q.ready.pop_front();
      Grain& g = grains_[call][e];
      if (g.phase != GrainPhase::ready) continue;
      if (barrier_cause(call, e) >= 0) {
        seal_suppressed_by_barrier(call, e);
        continue;
      }
      picked.push_back(e);
    }
  } else {
    // parent_bound: up to B siblings of the first live parent; the rest keep their order.
    std::deque<std::uint32_t> rest;
    std::uint32_t chosen = kNone;
    const bool root_call = pc.barrier_domain == pc.domain;
    auto scan = [&](std::uint32_t e) {
      Grain& g = grains_[call][e];
      if (g.phase != GrainPhase::ready) return;
      if (barrier_cause(call, e) >= 0) {
        seal_suppressed_by_barrier(call, e);
        return;
      }
      const std::uint32_t parent = root_call ? e : parent_[pc.domain][e];
      if (chosen == kNone) chosen = parent;
      if (parent == chosen && picked.size() < limit)
        picked.push_back(e);
      else
        rest.push_back(e);
    };
    if (lifo) {
      for (auto it = q.ready.rbegin(); it != q.ready.rend(); ++it) scan(*it);
      std::reverse(rest.begin(), rest.end());
    } else {
      for (std::uint32_t e : q.ready) scan(e);
    }
    q.ready = std::move(rest);
  }
  if (!picked.empty()) return make_reservation(call, std::move(picked), 0, false);
  // 3. Deferred recovery, after READY work.
  while (!q.deferred.empty()) {
    RecoveryBatch b = std::move(q.deferred.front());
    q.deferred.pop_front();
    auto live = take_live(call, b.grains, nullptr);
    if (!live.empty()) return make_reservation(call, std::move(live), b.retries_used, b.tail_used);
  }
  return std::nullopt;
}

// ---- Commit and failures --------------------------------------------------------------

std::string Engine::check_report(const InFlight& batch, const Report& report) const {
  const std::size_t rows = batch.grains.size();
  for (const RowFailure& rf : report.failures) {
    if (rf.row >= rows)
      return fmt::format("a failure names row {} of an RPC of {} rows", rf.row, rows);
  }
  if (report.outputs.size() != batch.outputs.size()) {
    return fmt::format("{} outputs for {} declared", report.outputs.size(), batch.outputs.size());
  }
  for (std::size_t k = 0; k < batch.outputs.size(); ++k) {
    const OutputReport& o = report.outputs[k];
    if (batch.outputs[k].child_block != 0 && o.lengths.size() != rows) {
      return fmt::format("expanded output {} reports {} list lengths for {} rows", k,
                         o.lengths.size(), rows);
    }
    if (batch.outputs[k].truth && o.truth.size() != rows) {
      return fmt::format("mask output {} reports {} booleans for {} rows", k, o.truth.size(), rows);
    }
  }
  return {};
}

CommitStatus Engine::commit(Report& report, const std::vector<BlockId>& created) {
  auto stale = [&] {
    ++stale_reports_;
    for (BlockId b : created) {
      // A duplicate of an accepted report names blocks that are live: those stay.
      const std::uint32_t local = block_local(b);
      if (block_batch(b) == options_.batch_index && local < blocks_.size() && blocks_[local].live)
        continue;
      StoreCommand c;
      c.kind = StoreCommand::Kind::release;
      c.block = b;
      store_commands_.push_back(std::move(c));
    }
    return CommitStatus::stale;
  };
  auto it = in_flight_.find(report.invocation);
  if (it == in_flight_.end()) return stale();
  const InFlight& f = it->second;
  const int call = f.call;
  // Validate the whole report before publishing anything: generation fence.
  for (std::size_t i = 0; i < f.grains.size(); ++i) {
    const Grain& g = grains_[call][f.grains[i]];
    if (g.phase != GrainPhase::in_flight || g.generation != f.generations[i]) {
      in_flight_.erase(it);
      return stale();
    }
  }
  if (!report.contract_error.empty()) return CommitStatus::contract_error;
  report.contract_error = check_report(f, report);
  if (!report.contract_error.empty()) return CommitStatus::contract_error;
  const PlanCall& pc = p_.calls[call];
  InFlight batch = std::move(it->second);
  in_flight_.erase(it);
  const std::size_t nout = pc.outputs.size();
  std::vector<std::int32_t> blocks(nout, -1);
  std::vector<std::int32_t> child_blocks(nout, -1);
  for (std::size_t k = 0; k < nout; ++k) {
    // Each new block is held while its rows are published: sealing a row can settle a group
    // and release that row before the later rows of the same block exist.
    blocks[k] = static_cast<std::int32_t>(block_local(batch.outputs[k].block));
    make_live(blocks[k]);
    ++blocks_[blocks[k]].uses;
    if (batch.outputs[k].child_block != 0) {
      child_blocks[k] = static_cast<std::int32_t>(block_local(batch.outputs[k].child_block));
      make_live(child_blocks[k]);
      ++blocks_[child_blocks[k]].uses;
    }
  }
  std::vector<std::uint8_t> failed_row(batch.grains.size(), 0);
  // GroupFailures first: install barriers, fail the triggering Grains.
  for (const RowFailure& rf : report.failures) {
    if (rf.kind != RowKind::group_failure) continue;
    const std::uint32_t e = batch.grains[rf.row];
    const std::int32_t cause = intern(rf.message, call, e);
    set_barrier(call, e, cause);
    if (failed_row[rf.row]) continue;
    failed_row[rf.row] = 1;
    seal_grain(call, e, ItemState::failed, cause, GrainEvent::commit);
  }
  for (const RowFailure& rf : report.failures) {
    if (rf.kind != RowKind::record_failure || failed_row[rf.row]) continue;
    failed_row[rf.row] = 1;
    seal_grain(call, batch.grains[rf.row], ItemState::failed,
               intern(rf.message, call, batch.grains[rf.row]), GrainEvent::commit);
  }
  std::vector<std::uint32_t> offsets(nout, 0);
  for (std::size_t row = 0; row < batch.grains.size(); ++row) {
    const std::uint32_t e = batch.grains[row];
    const bool publishable = !failed_row[row] && barrier_cause(call, e) < 0;
    for (std::size_t k = 0; k < nout; ++k) {
      if (child_blocks[k] < 0) continue;
      const std::uint32_t length = report.outputs[k].lengths[row];
      if (publishable) {
        splits_[pc.outputs[k]][e] = ListSplit{child_blocks[k], offsets[k], length};
        ++blocks_[child_blocks[k]].uses;  // held until the expansion is decided
      }
      offsets[k] += length;
    }
    if (failed_row[row]) continue;
    if (!publishable) {
      // In-flight siblings may finish, but their successes are rejected.
      seal_suppressed_by_barrier(call, e);
      continue;
    }
    move_grain(call, e, GrainEvent::commit);
    for (std::size_t k = 0; k < nout; ++k) {
      const std::uint8_t flags =
          batch.outputs[k].truth && report.outputs[k].truth[row] != 0 ? kTruth : 0;
      publish(pc.outputs[k], e, ItemState::present, blocks[k], static_cast<std::uint32_t>(row), -1,
              flags);
    }
    grain_sealed(call, e);
  }
  for (std::size_t k = 0; k < nout; ++k) {
    drop_use(blocks[k]);
    if (child_blocks[k] >= 0) drop_use(child_blocks[k]);
  }
  return CommitStatus::accepted;
}

std::string Engine::describe_grains(int call, const std::vector<std::uint32_t>& grains) const {
  std::string s;
  for (std::uint32_t e : grains) {
    s += fmt::format("{}{} g{}", s.empty() ? "" : ", ", entity_key(p_.calls[call].domain, e),
                     grains_[call][e].generation);
  }
  return s;
}

void Engine::requeue(int call, const std::vector<std::uint32_t>& grains, std::uint16_t retries_used,
                     bool tail_used, bool immediate) {
  for (std::uint32_t e : grains) {
    move_grain(call, e, GrainEvent::requeue);
    ++grains_[call][e].generation;
  }
  counters_[call].requeues += grains.size();
  RecoveryBatch b{grains, retries_used, tail_used};
  if (immediate)
    queues_[call].immediate.push_back(std::move(b));
  else
    queues_[call].deferred.push_back(std::move(b));
}

std::optional<Engine::InFlight> Engine::take_in_flight(std::uint64_t batch_id) {
  auto it = in_flight_.find(batch_id);
  if (it == in_flight_.end()) {
    ++stale_reports_;  // a report for an attempt already replayed or abandoned
    return std::nullopt;
  }
  InFlight batch = std::move(it->second);
  in_flight_.erase(it);
  return batch;
}

FailureVerdict Engine::fail(std::uint64_t batch_id, const std::string& error) {
  std::optional<InFlight> taken = take_in_flight(batch_id);
  if (!taken) return {};
  InFlight& batch = *taken;
  const int call = batch.call;
  const PlanCall& pc = p_.calls[call];
  // Barriered Grains are sealed before the policy is consulted.
  auto live = take_live(call, batch.grains, &batch.generations);
  if (live.empty()) return {};
  const RecoveryPolicy& policy = pc.recovery;
  auto abort_with = [&](const std::string& why) {
    // Keep the grains IN_FLIGHT: the run stops here.
    return FailureVerdict{
        true, fmt::format("Call {} (UDF {}) failed on Grains [{}]{}: {}; {}", pc.name, pc.udf,
                          describe_grains(call, live), why, error,
                          policy.kind() == RecoveryPolicy::Kind::abort
                              ? "the Module's recovery policy abort() (the default) stops the run "
                                "here: to contain such failures give the Module "
                                ".recovery(ro::RecoveryPolicy::retry_batch(n)), retry_tail(n) or "
                                "isolate_tail() (which marks a Grain that always fails FAILED and "
                                "lets the run go on)"
                              : "its retries are used up: isolate_tail() would mark a Grain that "
                                "always fails FAILED and let the run go on")};
  };
  switch (policy.kind()) {
    case RecoveryPolicy::Kind::abort:
      return abort_with("");
    case RecoveryPolicy::Kind::retry_batch:
    case RecoveryPolicy::Kind::retry_tail:
      if (batch.retries_used >= policy.retries()) {
        return abort_with(fmt::format(" after {} retries", batch.retries_used));
      }
      requeue(call, live, static_cast<std::uint16_t>(batch.retries_used + 1), false,
              policy.kind() == RecoveryPolicy::Kind::retry_batch);
      return {};
    case RecoveryPolicy::Kind::isolate_tail:
      if (!batch.tail_used) {
        requeue(call, live, batch.retries_used, true, false);
      } else if (batch.grains.size() > 1) {
        // Only an RPC of one Grain proves that Grain poisoned: when the barrier sealed the
        // others, the failure may have been theirs, so a lone survivor is retried alone.
        const std::size_t half = live.size() / 2;
        std::vector<std::uint32_t> a(live.begin(),
                                     live.begin() + static_cast<std::ptrdiff_t>(half));
        std::vector<std::uint32_t> b(live.begin() + static_cast<std::ptrdiff_t>(half), live.end());
        if (!a.empty()) requeue(call, a, batch.retries_used, true, false);
        requeue(call, b, batch.retries_used, true, false);
      } else {
        seal_grain(call, live[0], ItemState::failed, intern(error, call, live[0]),
                   GrainEvent::suppress);
      }
      return {};
  }
  return abort_with("");
}

FailureVerdict Engine::lost(std::uint64_t batch_id, const std::string& reason) {
  std::optional<InFlight> taken = take_in_flight(batch_id);
  if (!taken) return {};
  InFlight& batch = *taken;
  const int call = batch.call;
  const PlanCall& pc = p_.calls[call];
  auto live = take_live(call, batch.grains, &batch.generations);
  if (live.empty()) return {};
  for (std::uint32_t e : live) {
    if (grains_[call][e].infra_used >= pc.infra_retries) {
      return FailureVerdict{
          true,
          fmt::format("Call {} (UDF {}) lost its actor on Grains [{}] and the "
                      "infrastructure budget ({} replays per Grain) is exhausted: {}",
                      pc.name, pc.udf, describe_grains(call, live), pc.infra_retries, reason)};
    }
  }
  for (std::uint32_t e : live) ++grains_[call][e].infra_used;
  requeue(call, live, batch.retries_used, batch.tail_used, true);
  return {};
}

// ---- Completion -----------------------------------------------------------------------

bool Engine::complete() const {
  return fact_head_ >= facts_.size() && in_flight_.empty() && grains_sealed_ == grains_total_ &&
         roots_finished_ == rows_ && fatal_.empty();
}

bool Engine::stuck() const {
  if (complete() || fact_head_ < facts_.size() || !in_flight_.empty()) return false;
  for (std::size_t c = 0; c < queues_.size(); ++c) {
    if (has_work(static_cast<int>(c))) return false;
  }
  return true;
}

std::string Engine::deadlock_report() const {
  std::string calls;
  for (std::size_t c = 0; c < p_.calls.size(); ++c) {
    std::uint64_t waiting = 0, ready = 0, in_flight = 0;
    for (const Grain& g : grains_[c]) {
      if (g.phase == GrainPhase::waiting) ++waiting;
      if (g.phase == GrainPhase::ready) ++ready;
      if (g.phase == GrainPhase::in_flight) ++in_flight;
    }
    calls += fmt::format("; {}: {} sealed, {} waiting, {} ready, {} in flight", p_.calls[c].name,
                         counters_[c].sealed, waiting, ready, in_flight);
  }
  return fmt::format(
      "deadlock in input batch {} (rows {}..{}): nothing in flight and nothing dispatchable, but "
      "{} of {} Grains are sealed and {} of {} roots are terminal{}",
      options_.batch_index, first_row_, first_row_ + rows_, grains_sealed_, grains_total_,
      roots_finished_, rows_, calls);
}

std::vector<std::uint32_t> Engine::take_finished_roots() {
  std::vector<std::uint32_t> out;
  out.swap(finished_roots_);
  return out;
}

void Engine::root_outputs(std::uint32_t root, std::vector<Outcome>& outcomes,
                          std::vector<const std::string*>& causes,
                          std::vector<Binding>& values) const {
  outcomes.clear();
  causes.clear();
  values.clear();
  for (int out : p_.outputs) {
    const Item& it = items_[out][root];
    outcomes.push_back(to_outcome(it.state));
    causes.push_back(it.cause >= 0 ? &causes_[it.cause].message : nullptr);
    values.push_back(it.block >= 0 ? Binding{block_id(it.block), it.row} : Binding{});
  }
}

bool Engine::root_issue_origin(std::uint32_t root, std::size_t k, IssueOrigin& origin) const {
  const std::int32_t c = items_[p_.outputs[k]][root].cause;
  if (c < 0 || causes_[c].call < 0) return false;
  const Cause& cause = causes_[c];
  const PlanCall& pc = p_.calls[cause.call];
  origin.call = pc.name;
  origin.call_index = cause.call;
  origin.entity = entity_key(pc.domain, cause.entity);
  origin.attempts = cause.attempts;
  return true;
}

void Engine::root_delivered(std::uint32_t root) {
  root_delivered_[root] = 1;
  for (int out : p_.outputs) maybe_release(out, root);
}

std::vector<StoreCommand> Engine::take_store_commands() {
  std::vector<StoreCommand> out;
  out.swap(store_commands_);
  return out;
}

std::string Engine::entity_key(int domain, std::uint32_t entity) const {
  std::vector<std::uint32_t> path;
  while (domain > 0) {
    path.push_back(ordinal_[domain][entity]);
    entity = parent_[domain][entity];
    domain = p_.domains[domain].parent;
  }
  std::string s = std::to_string(first_row_ + entity);
  for (auto it = path.rbegin(); it != path.rend(); ++it) s += "/" + std::to_string(*it);
  return s;
}

}  // namespace rayorch::detail
