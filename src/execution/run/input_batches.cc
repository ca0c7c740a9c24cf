// Input-batch admission. See input_batches.h.
#include "execution/run/input_batches.h"

#include <algorithm>

namespace rayorch::detail {

InputBatches::InputBatches(std::shared_ptr<const RuntimePlan> plan, SourceData sources,
                           const RunOptions& options)
    : plan_(std::move(plan)),
      sources_(std::move(sources)),
      max_active_(options.max_active_input_batches),
      batch_rows_(options.input_batch_size == 0 ? std::max<std::size_t>(sources_.rows, 1)
                                                : options.input_batch_size),
      batch_count_(sources_.rows == 0 ? 0 : (sources_.rows + batch_rows_ - 1) / batch_rows_) {
  engine_options_.queue_order = options.queue_order;
  engine_options_.reservation = options.reservation;
}

std::size_t InputBatches::caller_row(std::size_t row) const {
  return sources_.original_rows.empty() ? row : sources_.original_rows[row];
}

void InputBatches::admit(BlockStore& store, RunRecorder& recorder) {
  while (next_batch_ < batch_count_ && active_.size() < max_active_) {
    const std::size_t first = next_batch_ * batch_rows_;
    const std::size_t rows = std::min(batch_rows_, sources_.rows - first);
    EngineOptions eo = engine_options_;
    eo.batch_index = next_batch_;
    if (!sources_.original_rows.empty()) {
      // Entity keys stay the caller's rows across resumes (docs/JOURNAL.md).
      const auto keys = sources_.original_rows.begin() + static_cast<std::ptrdiff_t>(first);
      eo.root_keys.assign(keys, keys + static_cast<std::ptrdiff_t>(rows));
    }
    // The batch's slice of each source column becomes its own block, so the batch's engine
    // names it like any other and the store frees it with the batch.
    std::vector<std::vector<std::uint8_t>> truth(sources_.blocks.size());
    for (std::size_t c = 0; c < sources_.blocks.size(); ++c) {
      const auto begin = sources_.values[c].begin() + static_cast<std::ptrdiff_t>(first);
      std::vector<const void*> slice(begin, begin + static_cast<std::ptrdiff_t>(rows));
      if (plan_->ports[plan_->sources[c]].needs_truth) {
        for (const void* v : slice) truth[c].push_back(*static_cast<const bool*>(v) ? 1 : 0);
      }
      store.put(
          make_block_id(next_batch_, static_cast<std::uint32_t>(c)),
          std::make_shared<ViewBlock>(std::move(slice), std::vector<BlockRef>{sources_.blocks[c]}));
    }
    active_.push_back(std::make_unique<Engine>(plan_, eo, first, rows, truth));
    recorder.batch_admitted(next_batch_, first, rows, active_.size());
    ++next_batch_;
    active_.back()->advance();
  }
}

void InputBatches::restore_source(BlockStore& store, std::size_t column, BlockId block,
                                  std::size_t first, std::size_t rows) const {
  const auto begin = sources_.values[column].begin() + static_cast<std::ptrdiff_t>(first);
  std::vector<const void*> slice(begin, begin + static_cast<std::ptrdiff_t>(rows));
  store.put(block, std::make_shared<ViewBlock>(std::move(slice),
                                               std::vector<BlockRef>{sources_.blocks[column]}));
}

Engine* InputBatches::find(std::size_t index) const {
  for (const auto& e : active_) {
    if (e->batch_index() == index) return e.get();
  }
  return nullptr;
}

void InputBatches::retire(std::size_t slot) {
  active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(slot));
}

}  // namespace rayorch::detail
