// What the workload commands share about a run: its options, its output directory and the
// per-stage lines of the end-of-run summary.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <rayorch/rayorch.h>

namespace workloads {

/// Busy time of one stage (Call) of the run.
struct StageSummary {
  std::string call;
  std::size_t rpcs = 0;
  std::size_t grains = 0;
  double busy_seconds = 0.0;
};

/// One StageSummary per Call of the run, in Call order.
std::vector<StageSummary> stage_summaries(const rayorch::RunMetrics& metrics);

/// "stages: <call> <rpcs> rpcs/<grains> grains busy <s> s; ...\n", or "" without stages.
std::string format_stages(const std::vector<StageSummary>& stages);

/// The run options a workload's convert options ask for (input batching, progress, trace
/// and report files).
template <class ConvertOptions>
rayorch::RunOptions run_options_of(const ConvertOptions& o) {
  rayorch::RunOptions r;
  r.input_batch_size = o.input_batch_size;
  r.max_active_input_batches = o.max_active_input_batches;
  r.progress = o.progress;
  r.trace_path = o.trace_path;
  r.report_path = o.report_path;
  r.live = o.live;
  return r;
}

/// Where the report page of the JSON report at `report_path` goes: beside it, the extension
/// replaced by ".html" ("run.json" -> "run.html"; "run.html" -> "run.html.html").
std::filesystem::path report_page_beside(const std::filesystem::path& report_path);

/// Adds a workload's own section to the engine's JSON report (RunOptions::report_path)
/// through the observer interface: `section()` is asked once, when the run ends, and must
/// return a complete JSON value as text.
class ReportSectionObserver final : public rayorch::RunObserver {
 public:
  ReportSectionObserver(std::string name, std::function<std::string()> section)
      : name_(std::move(name)), section_(std::move(section)) {}
  rayorch::ReportSection report_section() override { return {name_, section_()}; }

 private:
  std::string name_;
  std::function<std::string()> section_;
};

/// Hands every root event of the run (restored roots included, RootEvent::restored) to a
/// function: how a workload learns which delivered rows were computed and which restored.
class RootObserver final : public rayorch::RunObserver {
 public:
  explicit RootObserver(std::function<void(const rayorch::RootEvent&)> on_root)
      : on_root_(std::move(on_root)) {}
  void on_root(const rayorch::RootEvent& e) override { on_root_(e); }

 private:
  std::function<void(const rayorch::RootEvent&)> on_root_;
};

/// The run journal of a conversion into `out` (file `name` there), made ready for a run:
/// without `resume` an old journal is removed (a new run starts a new one, or none: an old
/// one would describe older outputs). Returns its path when `journal` keeps one, else "".
/// Throws InputError for `resume` without `journal`.
std::string prepare_run_journal(const std::filesystem::path& out, std::string_view name,
                                bool resume, bool journal);

/// Creates the output directory `out` (as given on the command line: `given`) and checks that
/// it is writable with a probe file named `probe_prefix`XXXXXX. Throws InputError.
void create_output_dir(const std::filesystem::path& out, const std::string& given,
                       std::string_view probe_prefix);

}  // namespace workloads
