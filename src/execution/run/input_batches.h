// Input-batch admission: cuts a run's source rows into input batches of
// RunOptions::input_batch_size rows and keeps up to max_active_input_batches of them admitted,
// each with its own Engine, lowest batch index first.
//
// Two kinds of source (SourceData): columns, whose rows are all there before the run starts,
// and a lazy source (SourceData::feed), whose rows are pulled chunk by chunk: one chunk of
// input_batch_size rows (kLazyInputBatchSize when 0) each time a batch is admitted, so the
// rows held are those of the active batches. A lazy source's row count is known once its
// feed said it ended; until then rows() and count() say how many were pulled and admitted.
//
// Threading: the driver thread only; the feed is called from admit().
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "rayorch/executor.h"

#include "execution/block_store.h"
#include "execution/run/run_recorder.h"
#include "program/plan.h"
#include "runtime/engine.h"

namespace rayorch::detail {

class InputBatches {
 public:
  /// `record_lineage`: the engines keep what rebuilding a lost value needs
  /// (EngineOptions::record_lineage), for a store that can lose values.
  InputBatches(std::shared_ptr<const RuntimePlan> plan, SourceData sources,
               const RunOptions& options, bool record_lineage = true);

  const SourceData& sources() const { return sources_; }
  /// Whether rows() is the run's row count: always for columns; for a lazy source once it
  /// ended.
  bool rows_known() const { return ended_; }
  /// The source rows to run: every row of columns; of a lazy source, those pulled so far.
  std::size_t rows() const { return rows_; }
  /// The input batches: every one of columns; of a lazy source, those admitted so far.
  std::size_t count() const { return batch_count_; }
  /// The caller's index of source row `row` (SourceData::original_rows, or the chunks'
  /// caller_rows).
  std::size_t caller_row(std::size_t row) const;

  /// Admits input batches up to the active limit: stores each one's slice of the source
  /// columns in `store` as its blocks and starts its Engine. A lazy source is pulled for
  /// each batch admitted here; what its feed throws propagates (nothing is admitted then).
  void admit(BlockStore& store, RunRecorder& recorder);
  /// The roots a lazy source's chunks restored (a run journal) since the last call:
  /// (the caller's row, its outcome), in the order pulled.
  std::vector<std::pair<std::size_t, Outcome>> take_restored() { return std::move(restored_); }
  /// Puts source column `column` of active input batch `batch` into `store` again as block
  /// `block` (a re-materialisation reads it; DESIGN 5.13).
  void restore_source(BlockStore& store, std::size_t batch, std::size_t column,
                      BlockId block) const;
  /// The admitted batches, lowest index first.
  std::span<const std::unique_ptr<Engine>> active() const { return active_; }
  /// The admitted batch `index`, or nullptr when it is not (or no longer) admitted.
  Engine* find(std::size_t index) const;
  /// Drops the admitted batch at position `slot` of active() (its engine is complete).
  void retire(std::size_t slot);
  /// Every batch was admitted (no source row is left to admit).
  bool all_admitted() const { return ended_ && next_batch_ >= batch_count_; }
  /// Every batch was admitted and retired.
  bool done() const { return ended_ && next_batch_ >= batch_count_ && active_.empty(); }

 private:
  // Starts batch next_batch_ on rows [first, first + rows) whose values are `values`
  // ([column][row]) held by `blocks`.
  void start(BlockStore& store, RunRecorder& recorder, std::size_t first, std::size_t rows,
             const std::vector<BlockRef>& blocks, std::span<const std::vector<const void*>> values,
             std::size_t offset);
  // Pulls the next chunk of a lazy source and starts its batch when it has rows to run.
  void pull(BlockStore& store, RunRecorder& recorder);

  std::shared_ptr<const RuntimePlan> plan_;
  SourceData sources_;
  EngineOptions engine_options_;  // batch_index set per batch
  std::size_t max_active_;
  std::size_t batch_rows_;
  std::size_t rows_;
  std::size_t batch_count_;
  bool ended_;  // every row is known (columns, or a lazy source that ended)
  std::size_t next_batch_ = 0;
  std::vector<std::unique_ptr<Engine>> active_;  // ordered by batch index
  // Per active batch: its slice of each source column, as put into the store at admission.
  std::map<std::size_t, std::vector<BlockRef>> source_slices_;
  // Per active batch of a lazy source whose chunks name caller rows (a journal's feed): its
  // first run row and the caller's row of each of its rows.
  std::map<std::size_t, std::pair<std::size_t, std::vector<std::size_t>>> feed_caller_rows_;
  std::vector<std::pair<std::size_t, Outcome>> restored_;
};

/// READY Grains of `call` over the `active` input batches (InputBatches::active()).
inline std::size_t ready_grains(std::span<const std::unique_ptr<Engine>> active, int call) {
  std::size_t ready = 0;
  for (const auto& e : active) ready += e->ready_count(call);
  return ready;
}

}  // namespace rayorch::detail
