// Which blocks each remote actor holds already, as the driver knows it (the Ray backend's
// pools, python/src/ray_pools.h, keep one per run of pools). Backend-neutral: it tracks block
// ids only, for any backend whose actors keep the blocks their RPCs brought.
//
// An actor keeps the blocks its RPCs read (source slices, other RPCs' outputs), by block id,
// so a block crosses to an actor once, not with every RPC that reads it: a source slice that
// Ray would fetch from its object store and a list the actor would convert again for each
// RPC otherwise cost more than the RPC itself (measured: a put ObjectRef passed with every
// call halves the calls per second). The driver sends a block's ObjectRef only to an actor
// that does not hold it, and tells an actor, with its next RPC, which of its blocks were
// released, so an actor holds no more than the blocks live when it last ran.
//
// What the store guarantees (python/src/ray_store.cc): block ids are unique within a run, and a
// block released here is never read again in that run (a group member is released only with the
// last group that reads it). Invariants, given that:
// - A block is recorded as held by an actor only after an RPC that carried it came back
//   from that actor having run there, and only if it was not released while that RPC was
//   on its way (with calls queued at an actor, a release can fall between a send and its
//   return); such a stale copy is queued for eviction instead.
// - A released block, and every block when a run's store ends, is dropped from every
//   actor's record and queued for eviction, so an id (reused by the next run) never
//   resolves to an actor's copy of other contents, and actors hold no more than the blocks
//   live when they last ran.
// - Hence no RPC both drops a block and reads it as held: a block it reads is live, and a
//   live block is never queued for eviction.
// - Several calls may be outstanding at one actor: a call that reads a block which an
//   earlier outstanding call carries sends it again, since the record waits for the return.
// - A kept block (an output an actor made and kept, DESIGN 5.12) is recorded when its call
//   came back ok from the actor as it is now; it has no copy elsewhere until it is exported,
//   so an actor reset with it loses it (the pools then report it lost to the engine).
//
// Threading: the driver's thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace rayorch::detail {

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

  /// One block an RPC carries, with the block's release count when it was sent.
  struct Send {
    BlockId block = 0;
    std::uint64_t releases = 0;
  };

  /// An RPC is about to carry `blocks` to an actor; arrived() takes what this returns.
  std::vector<Send> sending(const std::vector<BlockId>& blocks) {
    std::vector<Send> out;
    out.reserve(blocks.size());
    for (BlockId b : blocks) {
      InFlight& f = in_flight_[b];
      ++f.sends;
      out.push_back(Send{b, f.releases});
    }
    return out;
  }

  /// The RPC that carried `sends` is back. `ran`: it ran on the actor in (pool, actor) as
  /// that actor is now (not on an incarnation since replaced), which then holds the blocks.
  void arrived(int pool, int actor, const std::vector<Send>& sends, bool ran) {
    const std::size_t s = index(pool, actor);
    for (const Send& send : sends) {
      auto it = in_flight_.find(send.block);
      const bool stale = it == in_flight_.end() || it->second.releases != send.releases;
      if (it != in_flight_.end() && --it->second.sends == 0) in_flight_.erase(it);
      if (!ran) continue;
      Slot& slot = slots_[s];
      if (stale) {
        // The actor keeps a block released meanwhile: it drops it with its next RPC.
        queue_eviction(slot, send.block);
        continue;
      }
      if (slot.held.insert(send.block).second) holders_[send.block].push_back(s);
    }
  }

  /// A call that ran on the actor in (pool, actor) as that actor is now made `block` and the
  /// actor kept it (an output only Calls of its pool read, DESIGN 5.12): it holds it.
  void kept(int pool, int actor, BlockId block) {
    const std::size_t s = index(pool, actor);
    if (slots_[s].held.insert(block).second) holders_[block].push_back(s);
  }

  /// The actor of `pool` that holds `block`, or -1 when none does.
  int holder(int pool, BlockId block) const {
    auto it = holders_.find(block);
    if (it == holders_.end()) return -1;
    const std::size_t first = first_.at(static_cast<std::size_t>(pool));
    const std::size_t end = pool + 1 < static_cast<int>(first_.size())
                                ? first_[static_cast<std::size_t>(pool) + 1]
                                : slots_.size();
    for (std::size_t s : it->second) {
      if (s >= first && s < end) return static_cast<int>(s - first);
    }
    return -1;
  }

  /// `block` is gone from the driver's store (released, or put again): no actor may use its
  /// copy any more; each holder drops it with its next RPC.
  void released(BlockId block) {
    if (auto f = in_flight_.find(block); f != in_flight_.end()) ++f->second.releases;
    auto it = holders_.find(block);
    if (it == holders_.end()) return;
    for (std::size_t s : it->second) {
      if (slots_[s].held.erase(block) != 0) queue_eviction(slots_[s], block);
    }
    holders_.erase(it);
  }

  /// Every block is gone (the run's store ended).
  void released_all() {
    for (auto& [block, f] : in_flight_) ++f.releases;
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
    Slot& slot = slots_[index(pool, actor)];
    for (BlockId b : blocks) queue_eviction(slot, b);
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
  static void queue_eviction(Slot& slot, BlockId block) {
    if (std::find(slot.evict.begin(), slot.evict.end(), block) == slot.evict.end())
      slot.evict.push_back(block);
  }
  std::size_t index(int pool, int actor) const {
    return first_.at(static_cast<std::size_t>(pool)) + static_cast<std::size_t>(actor);
  }
  const Slot& at(int pool, int actor) const { return slots_.at(index(pool, actor)); }

  std::vector<std::size_t> first_;  // per pool: the index of its first slot
  std::vector<Slot> slots_;
  std::unordered_map<BlockId, std::vector<std::size_t>> holders_;
  // Blocks that outstanding RPCs carry: how many RPCs, and how often the block was released
  // since the first of them was sent (an entry lives while an RPC carrying it is out).
  struct InFlight {
    std::size_t sends = 0;
    std::uint64_t releases = 0;
  };
  std::unordered_map<BlockId, InFlight> in_flight_;
};

}  // namespace rayorch::detail
