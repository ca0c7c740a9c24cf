// Converting a set of PDFs into a directory of Markdown files: input discovery, resume,
// streaming atomic output, failure listing and the run summary.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/input_selection.h"
#include "common/run_summary.h"
#include "pdf2md/pdf2md.h"

namespace pdf2md {

/// A problem with the command's inputs, output locations or engines, found before anything
/// is converted (exit code 2 on the command line).
using InputError = workloads::InputError;

/// What `convert` does.
struct ConvertOptions {
  workloads::InputSelection inputs;  ///< PDF files, folders, glob patterns, manifests
  std::string out_dir;
  PipelineConfig pipeline;
  // Pages render 10-40x faster than they are OCR'd; the engine's backpressure keeps the
  // renderer a few pages ahead of OCR, so memory does not grow with a document's length.
  // Two input batches of 16 documents keep OCR fed across document boundaries while
  // bounding the documents in flight (page lists, texts waiting for their last page).
  std::size_t input_batch_size = 16;  ///< documents per input batch; 0: all in one
  std::size_t max_active_input_batches = 2;
  /// Continue an interrupted conversion: documents recorded finished in the run journal
  /// (OUT_DIR/.pdf2md-journal) are not converted again; without it the journal starts over.
  bool resume = false;
  /// Keep the run journal (the default). Without it nothing can be resumed later; it exists
  /// to measure what the journal costs and for one-off conversions.
  bool journal = true;
  std::string trace_path;   ///< Chrome trace of every RPC, when non-empty
  std::string report_path;  ///< JSON metrics report (plus a "pdf2md" section), when non-empty
  /// Write the report page (rayorch/report_page.h) beside the JSON report: its path with
  /// ".html" for its extension (report_page_beside).
  bool report_page = true;
  rayorch::LiveOptions live;  ///< the live page while the run lasts (off by default)
  bool progress = true;       ///< progress line on a terminal
};

/// A document that produced no Markdown.
struct FailedDocument {
  std::string stem;
  std::string input;
  std::string outcome;  ///< the root's: failed or suppressed (dropped ones are not failures)
  std::string cause;
};

/// Busy time of one stage of the run.
using StageSummary = workloads::StageSummary;

/// What a conversion did.
struct ConvertSummary {
  std::size_t documents = 0;           ///< PDFs found in the inputs
  std::vector<std::string> skipped;    ///< stems restored from the journal (--resume), sorted
  std::vector<std::string> converted;  ///< stems written by this run, in completion order
  std::vector<FailedDocument> failures;
  std::vector<std::string> dropped;      ///< stems dropped on purpose (not failures), sorted
  std::size_t pages = 0;                 ///< pages of the converted documents
  double startup_seconds = 0.0;          ///< building the actor pools (engine loading)
  double run_seconds = 0.0;              ///< the run itself
  double first_document_seconds = -1.0;  ///< run start to first written document; -1: none
  std::vector<StageSummary> stages;
  std::string out_dir;
  std::string failures_path;
};

/// The PDFs `inputs` selects (workloads::select_inputs: folders searched recursively for *.pdf
/// in any case, glob patterns, manifests, the shard). Throws InputError for a missing or
/// unreadable input, or two different files with the same stem (their outputs would clash).
std::vector<std::string> resolve_inputs(const workloads::InputSelection& inputs);

/// Converts every input document. Each finished document is written as soon as it is
/// complete, atomically, as OUT_DIR/<stem>.md, and then recorded in the run journal
/// OUT_DIR/.pdf2md-journal (rayorch/journal.h; its key is the stem plus the options that
/// shape the Markdown: --dpi, --lang, --tessdata, so the inputs may be named differently or
/// grow between runs, and a document converted with other options is converted again). A run
/// without `resume` starts a new journal; one with it restores the documents recorded finished
/// instead of converting them (rewriting a document's file from the journal only when the file is
/// missing or differs, so complete outputs stay untouched) and converts the rest, failed ones
/// included. Documents that fail are listed in OUT_DIR/failures.jsonl by the engine's dead letters
/// (RunOptions::dead_letters, docs/CONVERSION.md): replaced by an empty file when the run starts,
/// one line appended per document without Markdown as soon as it is known, with the fields stem,
/// input, outcome, failed and cause, plus key, row, output, call, entity, attempts and restored. A
/// journal written by another version of the pipeline is an InputError under `resume`. Throws
/// InputError before converting anything when the inputs, the output locations or the engines (e.g.
/// a missing OCR language) are unusable, and rayorch::ExecutionError when the run aborts.
ConvertSummary convert(const ConvertOptions& options);

/// The human-readable end-of-run summary.
std::string format_summary(const ConvertSummary& summary);

}  // namespace pdf2md
