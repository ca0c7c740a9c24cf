// Input-batch admission. See input_batches.h.
#include "execution/run/input_batches.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace rayorch::detail {

namespace {

std::size_t batch_rows(const SourceData& sources, const RunOptions& options) {
  if (options.input_batch_size != 0) return options.input_batch_size;
  // One batch of every row would pull a lazy source whole before its first row runs.
  return sources.feed ? kLazyInputBatchSize : std::max<std::size_t>(sources.rows, 1);
}

}  // namespace

InputBatches::InputBatches(std::shared_ptr<const RuntimePlan> plan, SourceData sources,
                           const RunOptions& options, bool record_lineage)
    : plan_(std::move(plan)),
      sources_(std::move(sources)),
      max_active_(options.max_active_input_batches),
      batch_rows_(batch_rows(sources_, options)),
      rows_(sources_.feed ? 0 : sources_.rows),
      batch_count_(sources_.feed || rows_ == 0 ? 0 : (rows_ + batch_rows_ - 1) / batch_rows_),
      ended_(!sources_.feed) {
  engine_options_.queue_order = options.queue_order;
  engine_options_.reservation = options.reservation;
  engine_options_.record_lineage = record_lineage;
}

std::size_t InputBatches::caller_row(std::size_t row) const {
  if (!sources_.feed) return sources_.original_rows.empty() ? row : sources_.original_rows[row];
  for (const auto& [batch, rows] : feed_caller_rows_) {
    if (row >= rows.first && row - rows.first < rows.second.size())
      return rows.second[row - rows.first];
  }
  if (!feed_caller_rows_.empty() || row >= rows_) {
    throw std::logic_error(
        fmt::format("internal error: row {} is in no admitted input batch", row));
  }
  return row;  // no chunk named caller rows: the run's rows are the caller's
}

void InputBatches::admit(BlockStore& store, RunRecorder& recorder) {
  while (active_.size() < max_active_) {
    if (sources_.feed) {
      if (ended_) return;
      pull(store, recorder);
      continue;
    }
    if (next_batch_ >= batch_count_) return;
    const std::size_t first = next_batch_ * batch_rows_;
    start(store, recorder, first, std::min(batch_rows_, rows_ - first), sources_.blocks,
          sources_.values, first);
  }
}

void InputBatches::pull(BlockStore& store, RunRecorder& recorder) {
  SourceChunk chunk = sources_.feed->next(batch_rows_);
  // A chunk that neither holds, restores nor ends anything would be pulled forever.
  const bool empty = chunk.rows == 0 && chunk.restored.empty() && !chunk.ended;
  if (empty || chunk.rows > batch_rows_ || chunk.blocks.size() != plan_->sources.size() ||
      chunk.values.size() != chunk.blocks.size() ||
      !std::all_of(chunk.values.begin(), chunk.values.end(),
                   [&](const auto& column) { return column.size() == chunk.rows; }) ||
      (!chunk.caller_rows.empty() && chunk.caller_rows.size() != chunk.rows)) {
    throw std::logic_error(fmt::format(
        "internal error: a lazy source returned a malformed chunk ({} rows for {} asked, {} "
        "columns for {})",
        chunk.rows, batch_rows_, chunk.blocks.size(), plan_->sources.size()));
  }
  ended_ = chunk.ended;
  restored_.insert(restored_.end(), chunk.restored.begin(), chunk.restored.end());
  if (chunk.rows == 0) return;
  const std::size_t first = rows_;
  // Kept while the batch is active only: a stream keeps nothing per row once it is done.
  if (!chunk.caller_rows.empty())
    feed_caller_rows_[next_batch_] = {first, std::move(chunk.caller_rows)};
  rows_ += chunk.rows;
  ++batch_count_;
  start(store, recorder, first, chunk.rows, chunk.blocks, chunk.values, 0);
}

void InputBatches::start(BlockStore& store, RunRecorder& recorder, std::size_t first,
                         std::size_t rows, const std::vector<BlockRef>& blocks,
                         std::span<const std::vector<const void*>> values, std::size_t offset) {
  EngineOptions eo = engine_options_;
  eo.batch_index = next_batch_;
  // Entity keys stay the caller's rows across resumes (docs/JOURNAL.md).
  if (const auto fed = feed_caller_rows_.find(next_batch_); fed != feed_caller_rows_.end()) {
    eo.root_keys = fed->second.second;
  } else if (!sources_.original_rows.empty()) {
    const auto keys = sources_.original_rows.begin() + static_cast<std::ptrdiff_t>(first);
    eo.root_keys.assign(keys, keys + static_cast<std::ptrdiff_t>(rows));
  }
  // The batch's slice of each source column becomes its own block, so the batch's engine
  // names it like any other and the store frees it with the batch (and with it a lazy
  // source's chunk).
  std::vector<std::vector<std::uint8_t>> truth(blocks.size());
  for (std::size_t c = 0; c < blocks.size(); ++c) {
    const auto begin = values[c].begin() + static_cast<std::ptrdiff_t>(offset);
    std::vector<const void*> slice(begin, begin + static_cast<std::ptrdiff_t>(rows));
    if (plan_->ports[plan_->sources[c]].needs_truth) {
      for (const void* v : slice) truth[c].push_back(*static_cast<const bool*>(v) ? 1 : 0);
    }
    BlockRef block =
        std::make_shared<ViewBlock>(std::move(slice), std::vector<BlockRef>{blocks[c]});
    source_slices_[next_batch_].push_back(block);
    store.put(make_block_id(next_batch_, static_cast<std::uint32_t>(c)), std::move(block));
  }
  active_.push_back(std::make_unique<Engine>(plan_, eo, first, rows, truth));
  recorder.batch_admitted(next_batch_, first, rows, active_.size());
  ++next_batch_;
  active_.back()->advance();
}

void InputBatches::restore_source(BlockStore& store, std::size_t batch, std::size_t column,
                                  BlockId block) const {
  // The batch's own slice, kept while the batch is active (a lazy source's chunk is not kept
  // anywhere else).
  store.put(block, source_slices_.at(batch).at(column));
}

Engine* InputBatches::find(std::size_t index) const {
  for (const auto& e : active_) {
    if (e->batch_index() == index) return e.get();
  }
  return nullptr;
}

void InputBatches::retire(std::size_t slot) {
  source_slices_.erase(active_[slot]->batch_index());
  feed_caller_rows_.erase(active_[slot]->batch_index());
  active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(slot));
}

}  // namespace rayorch::detail
