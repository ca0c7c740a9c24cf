// The in-process value store. See value_store.h.
#include "execution/value_store.h"

#include <stdexcept>

#include <fmt/format.h>

namespace rayorch::detail {

BlockRef* ValueStore::slot(BlockId id) {
  const std::size_t batch = block_batch(id);
  const std::uint32_t local = block_local(id);
  if (batch >= batches_.size()) batches_.resize(batch + 1);
  auto& blocks = batches_[batch];
  if (local >= blocks.size()) blocks.resize(static_cast<std::size_t>(local) + 1);
  return &blocks[local];
}

const BlockRef* ValueStore::find(BlockId id) const {
  const std::size_t batch = block_batch(id);
  const std::uint32_t local = block_local(id);
  if (batch >= batches_.size() || local >= batches_[batch].size()) return nullptr;
  const BlockRef& b = batches_[batch][local];
  return b ? &b : nullptr;
}

bool ValueStore::put(BlockId id, BlockRef block) {
  BlockRef* s = slot(id);
  if (*s) return false;  // a duplicate report's block: the first one stands
  *s = std::move(block);
  peak_ = std::max(peak_, ++live_);
  return true;
}

const BlockRef& ValueStore::block(BlockId id) const {
  const BlockRef* b = find(id);
  if (b == nullptr) {
    throw std::logic_error(
        fmt::format("internal error: block {:#x} is not in the store (released too early?)", id));
  }
  return *b;
}

const void* ValueStore::address(const Binding& b) const {
  return block(b.block)->at(b.row);
}

ResolvedInputs ValueStore::resolve_inputs(const Invocation& inv) const {
  ResolvedInputs r;
  r.columns.resize(inv.inputs.size());
  BlockId last = 0;
  const Block* last_block = nullptr;
  for (std::size_t i = 0; i < inv.inputs.size(); ++i) {
    auto& column = r.columns[i];
    column.reserve(inv.inputs[i].size());
    for (const Binding& b : inv.inputs[i]) {
      // Rows of one RPC mostly come from a few blocks: look each block up once per run.
      if (last_block == nullptr || b.block != last) {
        const BlockRef& ref = block(b.block);
        last = b.block;
        last_block = ref.get();
        r.keep_alive.push_back(ref);
      }
      column.push_back(last_block->at(b.row));
    }
  }
  return r;
}

void ValueStore::apply(const std::vector<StoreCommand>& commands) {
  for (const StoreCommand& c : commands) {
    switch (c.kind) {
      case StoreCommand::Kind::compose_group: {
        std::vector<const void*> members;
        members.reserve(c.members.size());
        auto keep = std::make_shared<std::vector<BlockRef>>();
        BlockId last = 0;
        for (const Binding& m : c.members) {
          const BlockRef& ref = block(m.block);
          if (keep->empty() || m.block != last) keep->push_back(ref);
          last = m.block;
          members.push_back(ref->at(m.row));
        }
        const void* group = nullptr;
        const GroupMaker maker = plan_->code->makers[c.reduce][c.value];
        put(c.block, maker(std::move(members), std::move(keep), &group));
        break;
      }
      case StoreCommand::Kind::release: {
        const std::size_t batch = block_batch(c.block);
        const std::uint32_t local = block_local(c.block);
        if (batch < batches_.size() && local < batches_[batch].size() && batches_[batch][local]) {
          batches_[batch][local].reset();
          --live_;
        }
        break;
      }
    }
  }
}

void ValueStore::release_batch(std::size_t batch) {
  if (batch >= batches_.size()) return;
  for (const BlockRef& b : batches_[batch]) {
    if (b) --live_;
  }
  std::vector<BlockRef>().swap(batches_[batch]);
}

}  // namespace rayorch::detail
