// A sink (RunOptions::sink): the run's results written into files that a reader can trust,
// each root exactly once, also across a crash and a journal resume (docs/IO.md).
//
// Parts. A sink writes the present roots, in delivery order, into parts: files in its
// directory, each written under a hidden temporary name and made visible complete (flushed to
// disk, renamed, the directory flushed). A part is committed when the run journal records it
// together with the roots it holds (`I` intent and `P` part records, docs/IO.md); a root is
// recorded finished only then. A part holds at most `rows_per_part` roots and rolls over at
// `bytes_per_part` bytes or once its first root is `max_part_age` old (checked as roots
// arrive), and the open part is committed when the run ends, aborted or not. Roots that are
// not present (failed, suppressed, dropped) go into no part: a failed one becomes a dead
// letter (RunOptions::dead_letters), recorded at once as without a sink.
//
// Exactly once. With a journal, a resume removes what a crash left uncommitted (temporaries,
// a part renamed before its record) before anything runs, keeps the committed parts, and
// computes (or restores from the journal) every root not in one; a restored root whose part
// is missing is written into a new part from its recorded value. So each root that ends
// present is in exactly one committed part. Without a journal, parts are still written
// atomically, but a rerun starts over.
//
// The manifest. At the end of every run the sink writes `_manifest.json` (atomically):
// the committed parts with their row counts, oldest first, and whether the run completed;
// a completed run also writes an empty `_SUCCESS`. A reader that lists the parts from the
// manifest never sees a partial or uncommitted file. A run that starts a new journal (or has
// none) starts a new output: the parts an earlier manifest lists are removed first.
//
// Threading: a sink's writers run on the thread that delivers roots (the caller's, during
// run()); committing a part flushes files to disk there.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "rayorch/detail/erased_output.h"

namespace rayorch {

namespace detail {
template <class Out>
struct RowOutput;
}  // namespace detail

/// A present root handed to a part writer.
struct SinkRoot {
  std::string_view key;  ///< its journal key (JournalOptions::key, else a digest, else the row)
  std::size_t row = 0;   ///< the caller's row
  /// Its outputs, every one present, as the executor hands them over (typed: `as<Out>()`).
  std::span<const detail::ErasedOutput> outputs{};

  /// The root as run() delivers it: `Out` is the program's output type
  /// (`Compiled<P>::output`), e.g. `root.as<std::string>().value()`.
  template <class Out>
  auto as() const {
    return detail::RowOutput<Out>::make(outputs);
  }
};

/// Writes one part's file. Threading: one thread at a time (the one delivering roots).
class PartWriter {
 public:
  virtual ~PartWriter() = default;
  /// Appends a root.
  virtual void write(const SinkRoot& root) = 0;
  /// Bytes written so far (SinkOptions::bytes_per_part).
  virtual std::uint64_t bytes() const = 0;
  /// Completes the file and flushes it to disk (fsync); the sink renames it afterwards.
  /// Throws (a full disk) to abort the run; the part is then not committed.
  virtual void finish() = 0;
};

/// How a sink's parts are named and written.
class PartFormat {
 public:
  virtual ~PartFormat() = default;
  /// The file name of the part numbered `sequence` (from 0, never reused by one output)
  /// whose first root is `first`: a plain name (no '/'), other than the sink's own
  /// (`_manifest.json`, `_SUCCESS`, names with ".rayorch-tmp-"). The same inputs must give
  /// the same names (no run-dependent part).
  virtual std::string part_name(std::uint64_t sequence, const SinkRoot& first) const = 0;
  /// The most roots a part may hold (0: no limit of the format's own).
  virtual std::size_t max_rows() const { return 0; }
  /// Opens a writer of a part whose bytes go to `path`.
  virtual std::unique_ptr<PartWriter> open(const std::string& path) const = 0;
};

/// Options of a sink (RunOptions::sink).
struct SinkOptions {
  /// The output directory, created when missing; empty: no sink.
  std::string directory{};
  /// The format of its parts (jsonl_parts, file_per_root, or your own).
  std::shared_ptr<const PartFormat> format{};
  /// A part is committed once it holds this many roots (>= 1)...
  std::size_t rows_per_part = 100000;
  /// ...or this many bytes...
  std::uint64_t bytes_per_part = std::uint64_t{128} << 20;
  /// ...or when a root arrives this long after the part's first (0: no limit).
  std::chrono::milliseconds max_part_age{0};

  bool enabled() const { return !directory.empty(); }
};

/// JSON lines: `line(root, out)` appends one root's line (without the newline) to `out`.
/// Parts are named `<prefix>-<sequence, 5 digits>.jsonl`.
std::shared_ptr<const PartFormat> jsonl_parts(
    std::function<void(const SinkRoot&, std::string& out)> line, std::string prefix = "part");

/// One part per root: `name(root)` is its file name (unique per root: a run that commits a
/// name twice stops with ExecutionError), `contents(root, out)` appends its bytes.
std::shared_ptr<const PartFormat> file_per_root(
    std::function<std::string(const SinkRoot&)> name,
    std::function<void(const SinkRoot&, std::string& out)> contents);

}  // namespace rayorch
