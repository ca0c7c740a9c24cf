// A run's JSON report (execution/observers/json_report.cc) read back and checked, as the
// report page draws it. Plain data; reading is the only logic here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "execution/report/failure_groups.h"

namespace rayorch::detail {

struct ReportCall {
  std::string call;  ///< "OcrPage#2"
  std::string udf;
  std::uint64_t actors = 0, rpcs = 0, grain_dispatches = 0, failed_rpcs = 0, requeues = 0;
  std::uint64_t suppressed_by_barrier = 0, batch_size = 0;
  double busy_seconds = 0, mean_batch_fill = 0;
  std::map<std::uint64_t, std::uint64_t> batch_size_histogram;  ///< size -> RPCs
  /// RPC durations (p50, p90, p99, max); empty when the report has none.
  std::vector<double> rpc_seconds;
  /// Actors busy on average per slice of the run, slices of `busy_bucket_seconds`; empty
  /// when the report has none.
  std::vector<double> busy_over_time;
  double busy_bucket_seconds = 0;
};

struct ReportPool {
  std::string pool;
  std::uint64_t actors = 0;
  std::vector<std::pair<double, std::string>> starts;  ///< (seconds, error or "")
  std::vector<std::pair<double, std::uint64_t>> actors_over_time;
  std::vector<std::string> resizes;  ///< "12.0 s: 2 -> 4 (backlog)"
};

/// One expansion's fan-out: how many children its parents had.
struct ReportExpand {
  std::string call;  ///< the Call whose list is expanded
  std::uint64_t port = 0, parents = 0, children = 0;
  std::map<std::uint64_t, std::uint64_t> fan_out_histogram;  ///< children -> parents
};

/// One sampled parent's stage windows: per Call (as in calls), from its first RPC's start to
/// its last RPC's end for this parent; none when the Call ran none for it.
struct ReportParentWindows {
  std::uint64_t row = 0;
  std::vector<std::optional<std::pair<double, double>>> windows;
};

struct ReportInputBatch {
  std::uint64_t index = 0, first_row = 0, rows = 0;
  double admitted_seconds = 0, completed_seconds = 0;
};

/// Everything the page shows. Invariant after read_report: every field the schema requires
/// was present with its type; optional ones are empty.
struct ReportModel {
  int version = 0;
  double elapsed_seconds = 0;
  bool aborted = false;
  std::string error;
  std::uint64_t roots_delivered = 0, roots_restored = 0, values_rebuilt = 0;
  std::uint64_t grains_reexecuted = 0, actors_replaced = 0;
  std::vector<ReportCall> calls;
  std::vector<ReportPool> pools;
  std::vector<ReportInputBatch> input_batches;
  std::vector<double> root_completed_seconds;  ///< by row; empty for streamed runs
  std::map<std::string, std::uint64_t> roots_by_outcome;
  std::vector<std::string> node_losses;             ///< one line each
  std::vector<ReportFailureGroup> failures;         ///< empty when the report has none
  std::vector<ReportExpand> expands;                ///< empty when the report has none
  std::vector<ReportParentWindows> parent_windows;  ///< empty when the report has none
  /// Sections observers added ("pdf2md", ...), as indented JSON text.
  std::vector<std::pair<std::string, std::string>> sections;
};

/// Parses and checks a JSON report. Throws std::invalid_argument naming `source` and what is
/// wrong: where the JSON breaks (byte offset), or the field (`calls[1].busy_seconds`) that
/// is missing or of the wrong type.
ReportModel read_report(std::string_view json, std::string_view source);

}  // namespace rayorch::detail
