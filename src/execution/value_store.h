// The value store of the in-process backends (a BlockStore, execution/block_store.h): the
// worker side of the protocol that owns the blocks the engine names by id (DESIGN 6.2). It resolves
// bindings to value addresses for invocations and for output materialisation, composes groups, and
// frees a block when the engine releases it, so value memory follows active work.
//
// Threading: not thread-safe; used from the driver's thread only. Attempts that run on other
// threads receive resolved addresses plus references to the blocks behind them (Resolved),
// so a block released while an abandoned attempt still runs stays alive for that attempt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "rayorch/detail/erased.h"

#include "execution/block_store.h"
#include "program/plan_code.h"
#include "runtime/protocol.h"

namespace rayorch::detail {

class ValueStore final : public BlockStore {
 public:
  explicit ValueStore(std::shared_ptr<const RuntimePlan> plan) : plan_(std::move(plan)) {}

  /// Stores `block` under `id`. Returns false, keeping the stored block, when `id` is
  /// taken: only a duplicate report names an id twice, and its rows are the same.
  bool put(BlockId id, BlockRef block) override;
  /// The block stored under `id`; throws std::logic_error when absent.
  const BlockRef& block(BlockId id) const;
  /// The address of a bound value; throws std::logic_error when its block is absent.
  const void* resolve(const Binding& b) override { return address(b); }
  const void* address(const Binding& b) const;
  /// Resolves every input of an invocation.
  ResolvedInputs resolve_inputs(const Invocation& inv) const override;
  /// Applies the engine's requests in order: compose groups, free blocks.
  void apply(const std::vector<StoreCommand>& commands) override;
  /// Frees every block of an input batch (when it retires).
  void release_batch(std::size_t batch) override;

  /// Blocks held now, and the most held at once.
  std::size_t live_blocks() const { return live_; }
  std::size_t peak_live_blocks() const { return peak_; }

 private:
  BlockRef* slot(BlockId id);
  const BlockRef* find(BlockId id) const;

  std::shared_ptr<const RuntimePlan> plan_;
  // Dense by (input batch, engine-local block index): ids are made that way (protocol.h).
  std::vector<std::vector<BlockRef>> batches_;
  std::size_t live_ = 0;
  std::size_t peak_ = 0;
};

}  // namespace rayorch::detail
