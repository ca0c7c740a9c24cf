// Re-materialisation, execution (DESIGN 5.13): parking the Grains whose inputs were lost,
// running the producers again at a new generation, redirecting the lost rows to the values
// they produced, composing groups again, and the budget past which readers fail.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "runtime/engine.h"
#include "runtime/engine_internal.h"

namespace rayorch::detail {

bool Engine::has_reexecution(int call) const {
  const auto& q = queues_[call].immediate;
  return std::any_of(q.begin(), q.end(), [](const RecoveryBatch& b) { return b.lineage >= 0; });
}

bool Engine::rebuilding(std::uint64_t rpc_id) const {
  auto it = in_flight_.find(rpc_id);
  return it != in_flight_.end() && it->second.lineage >= 0;
}

std::vector<std::pair<std::uint32_t, BlockId>> Engine::take_source_restores() {
  std::vector<std::pair<std::uint32_t, BlockId>> out;
  out.swap(rebuild_.sources);
  return out;
}

void Engine::inputs_lost(std::uint64_t rpc_id, const std::vector<BlockId>& blocks,
                         const std::string& reason) {
  require_lineage(reason);
  std::optional<InFlight> taken = take_in_flight(rpc_id);
  if (!taken) return;
  InFlight& in_flight = *taken;
  rebuild_.active = true;
  rebuild_.reason = reason;
  // A backend may name one lost input per report (Ray names the first argument it could not
  // fetch), so one loss of several original values reaches a reader as several reports.
  // Only a loss the reader has not been charged for counts against its budget: its first
  // one, or a value that was itself made again. A report naming no block of this batch
  // counts too, so a reader cannot be sent the same unreadable block without end.
  bool known = false, remade = false;
  for (BlockId id : blocks) {
    const std::uint32_t local = block_local(id);
    if (block_batch(id) != options_.batch_index || local >= blocks_.size()) continue;
    known = true;
    remade |= rebuild_.remade[local] != 0;
    mark_lost(static_cast<std::int32_t>(local));
  }
  const bool repeated = !known || remade;
  const int call = in_flight.call;
  const int budget = p_.calls[call].infra_retries;
  if (in_flight.lineage >= 0) {
    rebuild_failed(std::move(in_flight), "its own inputs were lost too: " + reason, true, repeated);
    return;
  }
  std::vector<std::uint32_t> waiting;
  for (std::uint32_t e : take_live(call, in_flight.grains, &in_flight.generations)) {
    Grain& g = grains_[call][e];
    std::uint16_t& used = rebuild_.charges[{call, e}];
    const bool charged = repeated || used == 0;
    if (charged && used >= budget) {
      // Past the budget: today's behaviour, the reader fails with the loss as its cause.
      seal_grain(call, e, ItemState::failed, intern("rayorch::BlockLost: " + reason, call, e),
                 GrainEvent::suppress);
      continue;
    }
    if (charged) ++used;
    move_grain(call, e, GrainEvent::requeue);
    ++g.generation;
    waiting.push_back(e);
  }
  counters_[call].requeues += waiting.size();
  if (!waiting.empty()) {
    rebuild_.parked.push_back(
        ParkedBatch{call, std::move(waiting), -1, in_flight.retries_used, in_flight.tail_used});
  }
  progress_rebuilds();
}

void Engine::require_lineage(const std::string& reason) const {
  if (options_.record_lineage) return;
  throw std::logic_error(fmt::format(
      "internal error: values were reported lost ({}), but the engine was told that its "
      "backend cannot lose values and kept no lineage to rebuild them "
      "(BlockStore::can_lose_values)",
      reason));
}

void Engine::outputs_lost(std::uint32_t root, const std::vector<BlockId>& blocks,
                          const std::string& reason) {
  require_lineage(reason);
  rebuild_.active = true;
  rebuild_.reason = reason;
  // Marking a block lost demands every row of it something still needs: this root's
  // outputs (not delivered, so not released) among them.
  std::size_t marked = 0;
  for (BlockId id : blocks) {
    const std::uint32_t local = block_local(id);
    if (block_batch(id) != options_.batch_index || local >= blocks_.size()) continue;
    mark_lost(static_cast<std::int32_t>(local));
    ++marked;
  }
  if (marked == 0) {
    // Nothing this batch made: holding the root back would only find the same loss again.
    fatal_ = fmt::format(
        "the outputs of root {} were lost ({}) in blocks input batch {} did not "
        "make, which it cannot rebuild",
        first_row_ + root, reason, options_.batch_index);
    return;
  }
  if (std::find(rebuild_.roots.begin(), rebuild_.roots.end(), root) == rebuild_.roots.end())
    rebuild_.roots.push_back(root);
  progress_rebuilds();
}

Engine::Avail Engine::output_availability(const Item& item, std::int32_t& cause) const {
  if (item.state != ItemState::present || item.block < 0) return Avail::ok;
  std::int32_t block = item.block;
  std::uint32_t row = item.row;
  return availability(block, row, cause);
}

bool Engine::release_waiting_roots() {
  bool demanded = false;
  std::vector<std::uint32_t> waiting;
  std::vector<std::uint32_t> entities;
  for (std::uint32_t root : rebuild_.roots) {
    bool wait = false;
    for (std::size_t k = 0; k < p_.outputs.size(); ++k) {
      if (output_below_root(k)) {
        output_entities(root, k, entities);
      } else {
        entities.assign(1, root);
      }
      for (std::uint32_t e : entities) {
        const Item& it = items_[p_.outputs[k]][e];
        std::int32_t cause = -1;
        const Avail a = output_availability(it, cause);
        if (a == Avail::lost) {
          std::int32_t block = it.block;
          std::uint32_t row = it.row;
          (void)availability(block, row, cause);  // where the lost row lives now
          demand(block, row);
          demanded = true;
        }
        wait |= a == Avail::lost || a == Avail::pending;
      }
    }
    if (wait)
      waiting.push_back(root);
    else
      finished_roots_.push_back(root);
  }
  rebuild_.roots = std::move(waiting);
  return demanded;
}

bool Engine::hold_back(int call, std::vector<std::uint32_t>& grains, std::uint16_t retries_used,
                       bool tail_used) {
  if (!rebuild_.active) return true;
  std::vector<std::uint32_t> go, wait;
  for (std::uint32_t e : grains) {
    std::int32_t cause = -1;
    switch (grain_inputs(call, e, cause)) {
      case Avail::ok:
        go.push_back(e);
        break;
      case Avail::failed:
        seal_grain(call, e, ItemState::failed, cause, GrainEvent::suppress);
        break;
      default:
        wait.push_back(e);
        break;
    }
  }
  grains = std::move(go);
  if (!wait.empty()) {
    rebuild_.parked.push_back(ParkedBatch{call, std::move(wait), -1, retries_used, tail_used});
    progress_rebuilds();
  }
  return !grains.empty();
}

// Plans what the losses need (re-executions, group compositions) and releases every batch
// whose inputs are all available again, to the front of its Call's queue. Runs to a fixed
// point: admitting one step can make another possible.
void Engine::progress_rebuilds() {
  for (bool changed = true; changed;) {
    changed = false;
    while (!rebuild_.queued.empty()) {
      auto node = rebuild_.queued.extract(rebuild_.queued.begin());
      const LineageRpc& rpc = rebuild_.rpcs[node.key()];
      std::vector<std::uint32_t> grains;
      for (std::uint32_t e : rpc.grains) {  // the RPC's row order
        if (std::find(node.mapped().begin(), node.mapped().end(), e) != node.mapped().end())
          grains.push_back(e);
      }
      for (std::uint32_t e : grains) ++grains_[rpc.call][e].generation;
      rebuild_.parked.push_back(ParkedBatch{rpc.call, std::move(grains),
                                            static_cast<std::int32_t>(node.key()), 0, false});
    }
    std::vector<GroupStep> groups;
    groups.swap(rebuild_.groups);
    std::size_t waiting = 0;
    for (const GroupStep& s : groups) {
      if (compose_again(s)) {
        changed = true;
      } else {
        rebuild_.groups.push_back(s);
        ++waiting;
      }
    }
    // Groups demanded meanwhile (by compose_again or admit_parked) are looked at next round.
    changed |= rebuild_.groups.size() > waiting;
    waiting = rebuild_.groups.size();
    std::vector<ParkedBatch> parked;
    parked.swap(rebuild_.parked);
    for (ParkedBatch& b : parked) {
      if (admit_parked(b))
        changed = true;
      else
        rebuild_.parked.push_back(std::move(b));
    }
    changed |= release_waiting_roots();
    changed |= !rebuild_.queued.empty() || rebuild_.groups.size() > waiting;
  }
}

bool Engine::compose_again(const GroupStep& s) {
  const PlanReduce& pr = p_.reduces[s.reduce];
  const Expansion& x = expand_.expansions[pr.child_domain][s.parent];
  StoreCommand c;
  c.kind = StoreCommand::Kind::compose_group;
  c.reduce = s.reduce;
  c.value = s.value;
  bool waiting = false;  // every lost member is demanded at once, so they are rebuilt together
  for (std::uint32_t k = 0; k < x.count; ++k) {
    const std::uint32_t child = x.first + k;
    if (items_[pr.members][child].state != ItemState::present) continue;
    const Item& it = items_[pr.values[s.value]][child];
    std::int32_t block = it.block, cause = -1;
    std::uint32_t row = it.row;
    const Avail a = availability(block, row, cause);
    if (a == Avail::failed) {
      unrebuildable(s.block, 0, cause);
      return true;
    }
    if (a == Avail::lost) demand(block, row);
    waiting |= a != Avail::ok;
    c.members.push_back(Binding{block_id(block), row});
  }
  if (waiting) return false;
  const std::int32_t fresh = new_block();
  make_live(fresh);
  ++blocks_[fresh].uses;  // held until the input batch retires
  rebuild_.lineage[fresh] = rebuild_.lineage[s.block];
  rebuild_.remade[fresh] = 1;
  c.block = block_id(fresh);
  store_commands_.push_back(std::move(c));
  redirect(s.block, 0, fresh, 0);
  ++rebuild_.values;
  return true;
}

bool Engine::admit_parked(ParkedBatch& b) {
  const bool reexecution = b.lineage >= 0;
  std::vector<std::uint32_t> kept;
  bool waiting = false;
  for (std::uint32_t e : b.grains) {
    if (!reexecution && grains_[b.call][e].phase != GrainPhase::ready) continue;
    std::int32_t cause = -1;
    const Avail a = grain_inputs(b.call, e, cause);
    if (a == Avail::failed) {
      if (reexecution) {
        // What it was to rebuild cannot be rebuilt either.
        rebuild_.grains.erase({b.call, e});
        const auto& g = rebuild_.rpcs[static_cast<std::size_t>(b.lineage)].grains;
        const auto at = std::find(g.begin(), g.end(), e) - g.begin();
        for (const auto& [block, row] :
             rows_of(static_cast<std::uint32_t>(b.lineage), static_cast<std::size_t>(at)))
          unrebuildable(block, row, cause);
      } else {
        seal_grain(b.call, e, ItemState::failed, cause, GrainEvent::suppress);
      }
      continue;
    }
    waiting |= a != Avail::ok;
    kept.push_back(e);
  }
  b.grains = std::move(kept);
  if (b.grains.empty()) return true;
  if (waiting) return false;
  RecoveryBatch r{std::move(b.grains), b.retries_used, b.tail_used, b.lineage, {}};
  if (reexecution) {
    // Its inputs may be Items nothing else needs any more: held until it reports.
    for (std::uint32_t e : r.grains) {
      for (int in : p_.calls[b.call].inputs) {
        const Item& it = items_[in][e];
        if (it.block < 0) continue;
        const auto local = static_cast<std::int32_t>(block_local(bound(it.block, it.row).block));
        if (std::find(r.holds.begin(), r.holds.end(), local) != r.holds.end()) continue;
        ++blocks_[local].uses;
        r.holds.push_back(local);
      }
    }
  }
  queues_[b.call].immediate.push_back(std::move(r));
  return true;
}

void Engine::release_holds(std::vector<std::int32_t>& holds) {
  for (std::int32_t b : holds) drop_use(b);
  holds.clear();
}

void Engine::commit_rebuild(InFlight in_flight, const Report& report) {
  const LineageRpc old = rebuild_.rpcs[static_cast<std::size_t>(in_flight.lineage)];
  const PlanCall& pc = p_.calls[in_flight.call];
  record_lineage(in_flight, report);  // the new blocks can be lost and rebuilt in turn
  std::vector<std::int32_t> failed(in_flight.grains.size(), -1);
  for (const RowFailure& rf : report.failures) {
    if (failed[rf.row] < 0)
      failed[rf.row] =
          loss_cause(fmt::format("{} failed on re-execution: {}", pc.name, rf.message));
  }
  std::vector<std::uint32_t> offsets(in_flight.outputs.size(), 0);
  for (std::size_t i = 0; i < in_flight.grains.size(); ++i) {
    const std::uint32_t e = in_flight.grains[i];
    const auto at = static_cast<std::size_t>(std::find(old.grains.begin(), old.grains.end(), e) -
                                             old.grains.begin());
    rebuild_.grains.erase({in_flight.call, e});
    ++rebuild_.reexecuted;
    for (std::size_t k = 0; k < in_flight.outputs.size(); ++k) {
      const auto block = static_cast<std::int32_t>(block_local(old.outputs[k].block));
      const auto fresh = static_cast<std::int32_t>(block_local(in_flight.outputs[k].block));
      if (failed[i] >= 0) {
        unrebuildable(block, static_cast<std::uint32_t>(at), failed[i]);
      } else {
        redirect(block, static_cast<std::uint32_t>(at), fresh, static_cast<std::uint32_t>(i));
        ++rebuild_.values;
      }
      if (old.outputs[k].child_block == 0) continue;
      const auto child = static_cast<std::int32_t>(block_local(old.outputs[k].child_block));
      const auto fresh_child =
          static_cast<std::int32_t>(block_local(in_flight.outputs[k].child_block));
      const auto [offset, length] = old.lists[k][at];
      const std::uint32_t now = report.outputs[k].lengths[i];
      std::int32_t cause = failed[i];
      if (cause < 0 && now != length) {
        // The rows of the other lists are in other places now: none can stand for the lost.
        cause = loss_cause(fmt::format("{} returned {} list elements on re-execution, {} before",
                                       pc.name, now, length));
      }
      for (std::uint32_t j = 0; j < length; ++j) {
        if (cause >= 0) {
          unrebuildable(child, offset + j, cause);
        } else {
          redirect(child, offset + j, fresh_child, offsets[k] + j);
          ++rebuild_.values;
        }
      }
      offsets[k] += now;
    }
  }
  for (std::size_t k = 0; k < in_flight.outputs.size(); ++k) {
    // The new blocks stay until the input batch retires: redirects name them.
    const auto fresh = static_cast<std::int32_t>(block_local(in_flight.outputs[k].block));
    make_live(fresh);
    rebuild_.remade[fresh] = 1;
    ++blocks_[fresh].uses;
    if (in_flight.outputs[k].child_block == 0) continue;
    const auto child = static_cast<std::int32_t>(block_local(in_flight.outputs[k].child_block));
    rebuild_.remade[child] = 1;
    make_live(child);
    ++blocks_[child].uses;
  }
  release_holds(in_flight.holds);
  progress_rebuilds();
}

void Engine::rebuild_failed(InFlight in_flight, const std::string& why, bool retry, bool repeated) {
  release_holds(in_flight.holds);
  const int call = in_flight.call;
  const int budget = p_.calls[call].infra_retries;
  const LineageRpc& rpc = rebuild_.rpcs[static_cast<std::size_t>(in_flight.lineage)];
  std::vector<std::uint32_t> again;
  for (std::size_t i = 0; i < in_flight.grains.size(); ++i) {
    const std::uint32_t e = in_flight.grains[i];
    Grain& g = grains_[call][e];
    if (g.generation != in_flight.generations[i]) continue;  // fenced
    std::uint16_t& used = rebuild_.charges[{call, e}];
    const bool charged = repeated || used == 0;
    if (retry && (!charged || used < budget)) {
      if (charged) ++used;
      ++g.generation;
      again.push_back(e);
      continue;
    }
    rebuild_.grains.erase({call, e});
    const std::int32_t cause = loss_cause(fmt::format("{} {}", p_.calls[call].name, why));
    const auto at = std::find(rpc.grains.begin(), rpc.grains.end(), e) - rpc.grains.begin();
    for (const auto& [block, row] :
         rows_of(static_cast<std::uint32_t>(in_flight.lineage), static_cast<std::size_t>(at)))
      unrebuildable(block, row, cause);
  }
  if (!again.empty())
    rebuild_.parked.push_back(ParkedBatch{call, std::move(again), in_flight.lineage, 0, false});
  progress_rebuilds();
}

}  // namespace rayorch::detail
