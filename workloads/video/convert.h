// Turning a set of videos into one JSON Lines file of per-video records: input discovery,
// streaming durable output, failure listing and the run summary.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/input_selection.h"
#include "common/run_summary.h"
#include "video/video.h"

namespace video {

/// A problem with the command's inputs, output locations, options or engines, found before
/// anything is processed (exit code 2 on the command line).
using InputError = workloads::InputError;

/// What `convert` does.
struct ConvertOptions {
  workloads::InputSelection inputs;  ///< video files, folders, glob patterns, manifests
  std::string out_dir;
  PipelineConfig pipeline;
  // Each video's frames wait in memory only between decoding and their per-frame stages;
  // two batches of eight videos keep OCR busy while decoding runs ahead.
  std::size_t input_batch_size = 8;  ///< videos per input batch; 0: all in one
  std::size_t max_active_input_batches = 2;
  /// Continue an interrupted run: videos recorded finished in the run journal
  /// (OUT_DIR/.video2jsonl-journal) are not processed again; without it the journal starts
  /// over.
  bool resume = false;
  /// Keep the run journal (the default). Without it nothing can be resumed later.
  bool journal = true;
  std::string trace_path;   ///< Chrome trace of every RPC, when non-empty
  std::string report_path;  ///< JSON metrics report (plus a "video2jsonl" section)
  /// Write the report page (rayorch/report_page.h) beside the JSON report: its path with
  /// ".html" for its extension (report_page_beside).
  bool report_page = true;
  rayorch::LiveOptions live;  ///< the live page while the run lasts (off by default)
  bool progress = true;       ///< progress line on a terminal
};

/// A video that produced no record.
struct FailedVideo {
  std::string video;
  std::string input;
  std::string outcome;  ///< the root's: failed or suppressed (dropped ones are not failures)
  std::string cause;
};

/// Busy time of one stage of the run.
using StageSummary = workloads::StageSummary;

/// What a conversion did.
struct ConvertSummary {
  std::size_t videos = 0;             ///< videos found in the inputs
  std::vector<std::string> written;   ///< videos processed by this run, in completion order
  std::vector<std::string> restored;  ///< videos whose record came from the journal, sorted
  std::vector<FailedVideo> failures;  ///< sorted by video
  std::vector<std::string> dropped;   ///< videos dropped on purpose (not failures), sorted
  std::size_t scenes = 0;             ///< scenes of the written videos
  std::size_t frames_analysed = 0;    ///< sampled frames of the written videos
  double startup_seconds = 0.0;       ///< building the actor pools (engine loading)
  double run_seconds = 0.0;
  double first_video_seconds = -1.0;  ///< run start to the first written record; -1: none
  std::vector<StageSummary> stages;
  std::string records_dir;    ///< OUT_DIR: parts videos-NNNNN.jsonl listed in _manifest.json
  std::string failures_path;  ///< OUT_DIR/failures.jsonl
};

/// File name extensions (lower case, with the dot) searched for in input directories.
const std::vector<std::string>& video_extensions();

/// The videos `inputs` selects (workloads::select_inputs: folders searched recursively for
/// video_extensions() in any case, glob patterns, manifests, the shard). Throws InputError for
/// a missing or unreadable input, no videos at all, or two files with the same stem (their
/// records would share a name).
std::vector<std::string> resolve_inputs(const workloads::InputSelection& inputs);

/// Processes every input video. Each video's record is one JSON line of a part
/// OUT_DIR/videos-NNNNN.jsonl, written through a sink (rayorch/sink.h, docs/IO.md): a part is
/// committed together with the run journal OUT_DIR/.video2jsonl-journal (keyed by the video's
/// stem plus the options that shape its record, so a video processed with other options is
/// processed again) once it holds 64 videos, when a video finishes 10 s after its first, and
/// when the run ends; OUT_DIR/_manifest.json lists the committed parts (read them with
/// rayorch::read_committed_lines). A run without `resume` starts a new journal and a new
/// output; one with it keeps the committed parts, restores the videos they hold, and processes
/// the rest, so the parts hold every finished video exactly once.
/// Videos without a record are listed in OUT_DIR/failures.jsonl by the engine's dead letters
/// (RunOptions::dead_letters, docs/CONVERSION.md): replaced by an empty file when the run
/// starts, one line appended per video without a record as soon as it is known (fields video,
/// input, outcome, failed, cause, plus
/// key, row, output, call, entity, attempts, restored). A journal written by another
/// version of the pipeline is an InputError under `resume`. Throws
/// InputError before processing anything when the inputs, the options, the output locations or the
/// engines are unusable, and rayorch::ExecutionError when the run aborts.
ConvertSummary convert(const ConvertOptions& options);

/// The human-readable end-of-run summary.
std::string format_summary(const ConvertSummary& summary);

}  // namespace video
