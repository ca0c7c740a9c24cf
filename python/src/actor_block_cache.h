// Which blocks each Ray actor holds already, as the driver knows it.
//
// An actor keeps the blocks its RPCs read (source slices, other RPCs' outputs), by block id,
// so a block crosses to an actor once, not with every RPC that reads it: a source slice that
// Ray would fetch from its object store and a list the actor would convert again for each
// RPC otherwise cost more than the RPC itself (measured: a put ObjectRef passed with every
// call halves the calls per second). The driver sends a block's ObjectRef only to an actor
// that does not hold it, and tells an actor, with its next RPC, which of its blocks were
// released, so an actor holds no more than the blocks live when it last ran.
//
// Invariants: a block is recorded as held by an actor only after an RPC that carried it has
// come back from that actor (so a call that failed in Ray leaves nothing recorded); a block
// id put again, released, or any block of a store that ends is dropped from every actor's
// record and queued for eviction, so an id is never resolved from an actor's copy of other
// contents. Several calls may be outstanding at one actor (queued behind each other): a call
// that reads a block which an earlier outstanding call carries sends it again, since the
// record waits for that call's return. Threading: the driver's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace rayorch::python {

class ActorBlockCache {
 public:
  using BlockId = std::uint64_t;

  /// One record per actor; `sizes` are the pools' actor counts.
  explicit ActorBlockCache(const std::vector<int>& sizes) {
    std::size_t n = 0;
    for (int s : sizes) {
      first_.push_back(n);
      n += static_cast<std::size_t>(s);
    }
    slots_.resize(n);
  }

  /// True when the actor in (pool, actor) holds `block`.
  bool holds(int pool, int actor, BlockId block) const {
    return at(pool, actor).held.count(block) != 0;
  }

  /// Records that the actor in (pool, actor) now holds `blocks` (its RPC carried them).
  void received(int pool, int actor, const std::vector<BlockId>& blocks) {
    const std::size_t s = index(pool, actor);
    for (BlockId b : blocks) {
      if (slots_[s].held.insert(b).second) holders_[b].push_back(s);
    }
  }

  /// `block` is gone from the driver's store (released, or put again): no actor may use its
  /// copy any more; each holder drops it with its next RPC.
  void released(BlockId block) {
    auto it = holders_.find(block);
    if (it == holders_.end()) return;
    for (std::size_t s : it->second) {
      if (slots_[s].held.erase(block) != 0) slots_[s].evict.push_back(block);
    }
    holders_.erase(it);
  }

  /// Every block is gone (the run's store ended).
  void released_all() {
    for (Slot& s : slots_) {
      for (BlockId b : s.held) s.evict.push_back(b);
      s.held.clear();
    }
    holders_.clear();
  }

  /// The actor in (pool, actor) was replaced: its successor holds nothing.
  void reset(int pool, int actor) {
    const std::size_t s = index(pool, actor);
    for (BlockId b : slots_[s].held) {
      auto it = holders_.find(b);
      if (it == holders_.end()) continue;
      std::erase(it->second, s);
      if (it->second.empty()) holders_.erase(it);
    }
    slots_[s].held.clear();
    slots_[s].evict.clear();
  }

  /// Evictions an RPC carried but the actor may not have applied (the call did not finish
  /// there): they go again with the next RPC (dropping a block twice is harmless).
  void requeue_evictions(int pool, int actor, const std::vector<BlockId>& blocks) {
    std::vector<BlockId>& evict = slots_[index(pool, actor)].evict;
    evict.insert(evict.end(), blocks.begin(), blocks.end());
  }

  /// The evictions to send with the next RPC to (pool, actor); taken once.
  std::vector<BlockId> take_evictions(int pool, int actor) {
    return std::exchange(slots_[index(pool, actor)].evict, {});
  }

 private:
  struct Slot {
    std::unordered_set<BlockId> held;
    std::vector<BlockId> evict;
  };
  std::size_t index(int pool, int actor) const {
    return first_.at(static_cast<std::size_t>(pool)) + static_cast<std::size_t>(actor);
  }
  const Slot& at(int pool, int actor) const { return slots_.at(index(pool, actor)); }

  std::vector<std::size_t> first_;  // per pool: the index of its first slot
  std::vector<Slot> slots_;
  std::unordered_map<BlockId, std::vector<std::size_t>> holders_;
};

}  // namespace rayorch::python
