// Input-batch admission: cuts a run's source rows into input batches of
// RunOptions::input_batch_size rows and keeps up to max_active_input_batches of them admitted,
// each with its own Engine, lowest batch index first.
//
// Threading: the driver thread only.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "rayorch/executor.h"

#include "execution/block_store.h"
#include "execution/run/run_recorder.h"
#include "program/plan.h"
#include "runtime/engine.h"

namespace rayorch::detail {

class InputBatches {
 public:
  InputBatches(std::shared_ptr<const RuntimePlan> plan, SourceData sources,
               const RunOptions& options);

  const SourceData& sources() const { return sources_; }
  /// How many input batches the run has.
  std::size_t count() const { return batch_count_; }
  /// The caller's index of source row `row` (SourceData::original_rows).
  std::size_t caller_row(std::size_t row) const;

  /// Admits input batches up to the active limit: stores each one's slice of the source
  /// columns in `store` as its blocks and starts its Engine.
  void admit(BlockStore& store, RunRecorder& recorder);
  /// Puts the rows [first, first + rows) of source column `column` into `store` again as
  /// block `block` (a re-materialisation reads them; DESIGN 5.13).
  void restore_source(BlockStore& store, std::size_t column, BlockId block, std::size_t first,
                      std::size_t rows) const;
  /// The admitted batches, lowest index first.
  std::span<const std::unique_ptr<Engine>> active() const { return active_; }
  /// The admitted batch `index`, or nullptr when it is not (or no longer) admitted.
  Engine* find(std::size_t index) const;
  /// Drops the admitted batch at position `slot` of active() (its engine is complete).
  void retire(std::size_t slot);
  /// Every batch was admitted and retired.
  bool done() const { return next_batch_ >= batch_count_ && active_.empty(); }

 private:
  std::shared_ptr<const RuntimePlan> plan_;
  SourceData sources_;
  EngineOptions engine_options_;  // batch_index set per batch
  std::size_t max_active_;
  std::size_t batch_rows_;
  std::size_t batch_count_;
  std::size_t next_batch_ = 0;
  std::vector<std::unique_ptr<Engine>> active_;  // ordered by batch index
};

}  // namespace rayorch::detail
