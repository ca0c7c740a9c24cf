// Where one run's blocks live, as the driver sees it (DESIGN 6.2): the driver forwards the
// engine's requests (store a block, compose a group, release, resolve for an invocation or
// for output materialisation) and never looks inside a payload itself.
//
// Implementations: ValueStore (execution/value_store.h) keeps the blocks in this process,
// for the thread and inline backends; a backend whose workers keep their blocks elsewhere
// (Ray's object store) provides its own through WorkerPools::make_store.
//
// Threading and ownership: one store per run, made by the run's pools and owned by the
// driver's run state; every member function is called from the driver's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "rayorch/detail/erased.h"

#include "runtime/protocol.h"

namespace rayorch::detail {

/// A group value of an invocation for a worker outside this process: which input and row it
/// is, and the bindings of its members in ordinal order (the worker composes the group).
///
/// A group whose members are groups themselves (a reduce of a reduce) is spelt out down to
/// its values: `members` are then the bindings of the innermost values in order, and `layout`
/// gives the nesting in pre-order, one entry per node of the tree starting with the group
/// itself: a node's number of members, or kGroupLeaf for a value (the next of `members`).
/// For a group of plain values `layout` is empty.
inline constexpr std::uint32_t kGroupLeaf = 0xffffffffU;
struct GroupInput {
  std::uint32_t input = 0;
  std::uint32_t row = 0;
  std::vector<Binding> members;
  std::vector<std::uint32_t> layout;
};

/// An invocation's inputs as the store resolved them for a worker, plus the blocks they live
/// in. An in-process store fills `columns` with value addresses; a store whose blocks live
/// elsewhere leaves `columns` empty, lists every distinct block the invocation reads in
/// `keep_alive` (its own handles of them) and spells out each group value in `groups`.
struct ResolvedInputs {
  std::vector<std::vector<const void*>> columns;  ///< [input][row]
  std::vector<BlockRef> keep_alive;               ///< distinct blocks behind the inputs
  std::vector<GroupInput> groups;                 ///< remote stores only
};

class BlockStore {
 public:
  virtual ~BlockStore() = default;

  /// Stores `block` under `id`: a block the driver made (a source slice) or one a worker
  /// returned. Returns false, keeping the stored block, when `id` is taken: only a duplicate
  /// report names an id twice, and its rows are the same.
  virtual bool put(BlockId id, BlockRef block) = 0;
  /// The address of a bound value, for output materialisation (a remote store fetches the
  /// block first); valid until the block is released. Throws std::logic_error when absent.
  virtual const void* resolve(const Binding& b) = 0;
  /// Resolves every input of an invocation for the worker that will run it.
  virtual ResolvedInputs resolve_inputs(const Invocation& inv) const = 0;
  /// Applies the engine's requests in order: compose groups, free blocks.
  virtual void apply(const std::vector<StoreCommand>& commands) = 0;
  /// Frees every block of an input batch (when it retires).
  virtual void release_batch(std::size_t batch) = 0;

  /// True when a value stored here may become unreadable later (kept off the driver, on a
  /// node that can be lost): the engines then keep the lineage that rebuilds lost values
  /// (DESIGN 5.13, EngineOptions::record_lineage), and only then may the pools report
  /// Attempt::Kind::inputs_lost or unreadable() name a block.
  virtual bool can_lose_values() const { return false; }
  /// True when resolve() may have to fetch blocks from elsewhere: the driver then announces
  /// the values it is about to resolve with prefetch(), so they come in one round trip.
  virtual bool fetches() const { return false; }
  /// The values resolve() will be asked for next (a hint; bindings of absent blocks are
  /// ignored).
  virtual void prefetch(const std::vector<Binding>& /*values*/) {}
  /// The blocks behind `values` that cannot be read because they were lost with their
  /// storage (a Ray node), each once; `reason` is set to the loss. Only a store whose blocks
  /// live elsewhere loses any; the driver asks before it resolves a root's outputs.
  virtual std::vector<BlockId> unreadable(const std::vector<Binding>& /*values*/,
                                          std::string& /*reason*/) {
    return {};
  }
};

}  // namespace rayorch::detail
