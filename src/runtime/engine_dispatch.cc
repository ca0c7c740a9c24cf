// Dispatch: the per-Call queues and reservation of Grains into an Invocation (DESIGN 5,
// 6.2): immediate retries first, then READY work by the pool's Reservation policy, then
// deferred recovery.
#include <algorithm>

#include "runtime/engine.h"
#include "runtime/engine_internal.h"

namespace rayorch::detail {

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
                                    std::uint16_t retries_used, bool tail_used,
                                    std::int32_t lineage, std::vector<std::int32_t> holds) {
  const PlanCall& pc = p_.calls[call];
  Invocation r;
  r.id = next_rpc_id_++;
  r.input_batch = options_.batch_index;
  r.call = call;
  r.generations.reserve(grains.size());
  r.inputs.assign(pc.inputs.size(), {});
  for (auto& column : r.inputs) column.reserve(grains.size());
  for (std::uint32_t e : grains) {
    // A re-execution runs sealed Grains again: it moves no Grain (DESIGN 5.13).
    if (lineage < 0) move_grain(call, e, GrainEvent::reserve);
    r.generations.push_back(grains_[call][e].generation);
    for (std::size_t i = 0; i < pc.inputs.size(); ++i) {
      const Item& it = items_[pc.inputs[i]][e];
      r.inputs[i].push_back(bound(it.block, it.row));
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
  in_flight_.emplace(r.id, InFlight{call, r.grains, r.generations, r.outputs, retries_used,
                                    tail_used, lineage, std::move(holds)});
  return r;
}

std::optional<Invocation> Engine::reserve(int call, std::size_t max_ready) {
  CallQueues& q = queues_[call];
  const PlanCall& pc = p_.calls[call];
  const auto batch_size = static_cast<std::size_t>(pc.batch_size);
  const std::size_t limit = max_ready > 0 ? std::min(batch_size, max_ready) : batch_size;
  // 1. Immediate retries, served before READY work.
  while (!q.immediate.empty()) {
    RecoveryBatch b = std::move(q.immediate.front());
    q.immediate.pop_front();
    if (b.lineage >= 0) {
      return make_reservation(call, std::move(b.grains), 0, false, b.lineage, std::move(b.holds));
    }
    auto live = take_live(call, b.grains, nullptr);
    if (!live.empty() && hold_back(call, live, b.retries_used, b.tail_used))
      return make_reservation(call, std::move(live), b.retries_used, b.tail_used);
  }
  // 2. READY work. Grains whose inputs are being re-materialised are held back (5.13), so
  // picking goes on until an RPC's worth is left or the queue is empty.
  const Reservation policy = options_.reservation.value_or(p_.pools[pc.pool].options.reservation);
  const bool lifo = options_.queue_order == QueueOrder::lifo;
  std::vector<std::uint32_t> picked;
  while (!q.ready.empty()) {
    picked.clear();
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
      std::uint32_t chosen = kNoEntity;
      const bool root_call = pc.barrier_domain == pc.domain;
      auto scan = [&](std::uint32_t e) {
        Grain& g = grains_[call][e];
        if (g.phase != GrainPhase::ready) return;
        if (barrier_cause(call, e) >= 0) {
          seal_suppressed_by_barrier(call, e);
          return;
        }
        const std::uint32_t parent = root_call ? e : parent_[pc.domain][e];
        if (chosen == kNoEntity) chosen = parent;
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
    if (!picked.empty() && hold_back(call, picked, 0, false))
      return make_reservation(call, std::move(picked), 0, false);
  }
  // 3. Deferred recovery, after READY work.
  while (!q.deferred.empty()) {
    RecoveryBatch b = std::move(q.deferred.front());
    q.deferred.pop_front();
    auto live = take_live(call, b.grains, nullptr);
    if (!live.empty() && hold_back(call, live, b.retries_used, b.tail_used))
      return make_reservation(call, std::move(live), b.retries_used, b.tail_used);
  }
  return std::nullopt;
}

}  // namespace rayorch::detail
