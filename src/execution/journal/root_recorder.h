// Where each root of a journaled run goes once it is terminal (run_journaled): the caller,
// the sink (a present root; rayorch/sink.h), the journal (held for the sink's open part, else
// committed at once) and the dead letters, in that order; and the end of such a run.
//
// Threading: the run's thread. Borrows everything it points to.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "rayorch/executor.h"

#include "execution/journal/dead_letters.h"
#include "execution/journal/run_journal.h"
#include "execution/sink/part_committer.h"

namespace rayorch::detail {

struct RootRecorder {
  const RunOptions& options;
  const OutputCodec& codec;
  const RootCallback& deliver;
  RunJournal* journal = nullptr;   ///< nullptr: no journal
  PartCommitter* sink = nullptr;   ///< nullptr: no sink
  DeadLetterFile* dead = nullptr;  ///< nullptr: no dead letters
  bool sink_failed = false;  ///< a sink's write or commit threw: its open part is not committed

  /// A root this run computed, as caller's row `row`.
  void computed(std::size_t row, const std::string& key, std::span<const ErasedOutput> e);
  /// A root restored from the journal reaches the caller again; a present one whose part is
  /// not in place (or that has none) is staged again from its recorded value.
  void restored(std::size_t row, const std::string& key, const JournalEntry& entry);

 private:
  void stage(std::size_t row, const std::string& key, std::span<const ErasedOutput> e);
  void roll();
};

/// The sink of a run (none unless RunOptions::sink is enabled), prepared for it: a journal
/// that holds no record starts a new output.
std::unique_ptr<PartCommitter> open_sink(const RunOptions& options, RunJournal* journal);

/// Runs `core` with `wrapped` (which hands roots to `recorder`), then commits the sink's open
/// part, flushes the journal and writes the sink's manifest. An aborted run (an exception out
/// of core.run) still commits the open part (its roots were delivered) unless the sink itself
/// failed (the part is then removed, its roots not recorded), and writes the manifest of the
/// parts committed so far marked incomplete; the exception then propagates unchanged.
RunMetrics run_recorded(ExecutionCore& core, SourceData sources, const RunOptions& options,
                        const RootCallback& wrapped, RootRecorder& recorder);

}  // namespace rayorch::detail
