// The run journal (RunOptions::journal): a run that can be interrupted and resumed without
// redoing finished work.
//
// Root identity. Every source row has a key that is stable across runs: by default a
// 64-bit FNV-1a digest (16 hex digits) of the row's encoded source values (rayorch/codec.h;
// every source type then needs a Codec), or the string JournalOptions::key returns for the
// row. Identical rows share a key, and so share one recorded result.
//
// The file. Append-only records, each framed as u32 payload length, u32 CRC-32 of the
// payload, payload (little-endian). The first record is a header naming the plan's
// fingerprint (a digest of its Calls, UDF types, static arguments and Port types) and a
// digest of the run's keys; every terminal root appends one record: its key, each output's
// outcome, cause, issue origin and, when present, its value encoded with Codec (every output
// type then needs a Codec). A later record for a key replaces an earlier one.
//
// Resuming. A run with an existing journal admits only the rows whose key is not recorded
// as finished; the recorded ones are delivered to the RunResult or the streaming callback as
// if computed (before the computed ones), and counted in RunMetrics::roots_restored. A root
// is finished when it is present or dropped; a failed or suppressed one is run again unless
// retry_failed is false. A journal written for another pipeline or for other inputs is
// refused with std::invalid_argument unless `force` (then its records are used and a new
// header is appended). A torn or corrupt tail (a record whose length or checksum does not
// hold, e.g. after a crash mid-write) is cut off: the file is truncated to its last good
// record, RunMetrics::journal_discarded_bytes says how much went, and a line on stderr says
// so; the roots in it run again.
//
// Observers. Restored roots reach observers like computed ones: after on_run_start, each is
// delivered and then reported to on_root with RootEvent::restored, before any computed root;
// RootEvent::row is always the caller's row (docs/JOURNAL.md).
//
// With a sink (RunOptions::sink, rayorch/sink.h), a present root's record is held until the
// part holding it is committed, and written with that part's record (docs/IO.md).
//
// Durability and guarantee. A root's record is committed after the caller has received it
// (the RunResult slot is filled or the streaming callback returned), so a root recorded
// finished had its delivery complete. A writer thread of the journal writes (write(2)) the
// committed records in groups, at most `write_interval` after the first of a group, and
// flushes them to disk (fdatasync) in groups: every `sync_every_records` records, at the
// first group `sync_interval` after the last flush, and when the run ends or aborts. A killed
// process loses only the records of its last `write_interval`; a power loss or OS crash
// loses at most the records since the last flush. A root recorded finished is never run
// again; every other root is run again (side effects at least once).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace rayorch {

/// Options of a run journal (RunOptions::journal).
struct JournalOptions {
  /// The journal file; empty: no journal. Created when missing; its directory must be
  /// writable (run() throws std::invalid_argument before anything runs otherwise).
  std::string path{};
  /// Run roots recorded as failed or suppressed again (default); false restores them too.
  bool retry_failed = true;
  /// Use a journal written for another pipeline or other inputs anyway.
  bool force = false;
  /// Use a journal written by the same pipeline for other inputs (say, a directory that
  /// gained files): rows whose key is recorded are restored, the others run.
  bool allow_other_inputs = false;
  /// The key of a source row (by row index); default: a digest of its source values.
  std::function<std::string(std::size_t row)> key{};
  /// A committed record waits in memory at most this long before the journal's writer
  /// thread writes it (write(2)) with the others committed meanwhile (sooner once 64 KiB
  /// wait). A process killed in between loses those records: their roots run again.
  std::chrono::milliseconds write_interval{5};
  /// Group commit: flush to disk after this many records (>= 1)...
  std::size_t sync_every_records = 4096;
  /// ...or at the first record this long after the last flush.
  std::chrono::milliseconds sync_interval{200};
};

}  // namespace rayorch
