// The conversion driver both workload commands share: checking the command before anything
// is written, starting the engines, the output directory and its run journal, the failure
// list (failures.jsonl), and the bookkeeping of the end-of-run summary. Each workload keeps
// what is its own: finding its inputs, its pipeline, writing its outputs, its report section
// and the wording of its summary.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/files.h"
#include "common/output_lock.h"
#include "common/run_summary.h"
#include <fmt/format.h>

#include <rayorch/rayorch.h>
#include <rayorch/report_page.h>

namespace workloads {

/// What one workload calls the files and fields of its conversion.
struct ConvertNaming {
  std::string_view probe_prefix;  ///< of writability probe files, e.g. ".pdf2md-probe-"
  std::string_view temp_infix;    ///< of temporaries an interrupted run may leave
  std::string_view journal_name;  ///< the run journal in the output directory
  std::string_view report_name;   ///< the workload's section of the JSON report
  std::string_view input_field;   ///< the field of failures.jsonl naming an input ("stem")
  std::string_view redo;  ///< what a run without --resume does ("convert every document again")
};

/// What a conversion did, in the words the driver knows; `Failure` is the workload's record of
/// an input without output, an aggregate {name, input, outcome, cause}.
template <class Failure>
struct ConvertTally {
  std::vector<std::string> written;   ///< inputs converted by this run, in completion order
  std::vector<std::string> restored;  ///< inputs restored from the journal, sorted
  std::vector<Failure> failures;      ///< sorted by name once the run is over
  /// Inputs without output on purpose (a filter dropped their root): not failures, so they
  /// leave the exit status alone; sorted. failures.jsonl lists them with "failed": false.
  std::vector<std::string> dropped;
  double startup_seconds = 0.0;  ///< building the actor pools (engine loading)
  double run_seconds = 0.0;
  double first_written_seconds = -1.0;  ///< run start to the first written input; -1: none
  std::vector<StageSummary> stages;
};

/// An output directory made ready, and held, for one run.
struct PreparedOutput {
  OutputLock lock;           ///< no other run writes the directory while this is held
  std::string journal_path;  ///< "" without a journal
};

/// The output directory made ready for a run: created, checked writable, locked against a
/// concurrent run (output_lock.h), cleared of an interrupted run's temporaries, its run
/// journal prepared (prepare_run_journal). Throws InputError.
PreparedOutput prepare_output_dir(const std::filesystem::path& out, const std::string& given,
                                  const ConvertNaming& naming, bool resume, bool journal);

/// The InputError for the std::invalid_argument a run raises before anything ran (its journal
/// or failure list cannot be used).
InputError unusable_run_files(const std::invalid_argument& e, const std::string& journal_path,
                              const ConvertNaming& naming);

/// Drives one conversion of `files` with `Pipeline` into `options.out_dir`. `Options` has the
/// fields of run_options_of plus out_dir, resume and journal; `Failure` is described at
/// ConvertTally, `name_of` its name field. Usage: the constructor, start_engines and
/// prepare_output, in the order the workload wants its checks, then run.
template <class Pipeline, class Failure>
class ConvertDriver {
 public:
  using Value = typename rayorch::Compiled<Pipeline>::output;
  using Clock = std::chrono::steady_clock;

  /// Checks what needs nothing built: an output directory is named, the trace and report
  /// files can be written. Throws InputError.
  template <class Options>
  ConvertDriver(const ConvertNaming& naming, const Options& options, std::vector<std::string> files,
                std::string Failure::*name_of)
      : naming_(naming),
        files_(std::move(files)),
        out_(options.out_dir),
        name_of_(name_of),
        run_options_(run_options_of(options)),
        resume_(options.resume),
        journal_(options.journal),
        report_page_(options.report_page && !options.report_path.empty()
                         ? report_page_beside(options.report_path)
                         : std::filesystem::path()) {
    if (options.out_dir.empty()) throw InputError("no output directory given");
    require_output_file_location(options.trace_path, "trace file", naming_.probe_prefix);
    require_output_file_location(options.report_path, "report file", naming_.probe_prefix);
    if (!report_page_.empty()) {
      require_output_file_location(report_page_.string(), "report page", naming_.probe_prefix);
    }
    for (const std::string& f : files_) stems_.push_back(std::filesystem::path(f).stem().string());
  }

  /// Builds the executor from `args` and waits until each pool has an actor whose engine
  /// loaded (the executor itself returns before: eager start). Nothing has run yet, so an
  /// engine that cannot load (say, a missing OCR language) is InputError: a problem with the
  /// command, not a failed run.
  template <class... Args>
  void start_engines(Args&&... args) {
    const auto startup = Clock::now();
    try {
      executor_.emplace(std::forward<Args>(args)...);
      executor_->await_actors();
    } catch (const rayorch::ExecutionError& e) {
      throw InputError(fmt::format("cannot start the pipeline: {}", e.what()));
    }
    tally_.startup_seconds = seconds_since(startup);
  }

  /// Writes every converted input through a sink into the output directory (rayorch/sink.h,
  /// docs/IO.md): each output is committed with its journal record, so that after a crash
  /// and --resume every input's output is there exactly once, and `_manifest.json` lists
  /// them. Call before run().
  /// `rows_per_part` and `max_part_age` as SinkOptions.
  void write_through(std::shared_ptr<const rayorch::PartFormat> format,
                     std::size_t rows_per_part = 1,
                     std::chrono::milliseconds max_part_age = std::chrono::milliseconds(0)) {
    sink_format_ = std::move(format);
    sink_rows_per_part_ = rows_per_part;
    sink_max_part_age_ = max_part_age;
  }

  /// Makes the output directory ready and holds it until the driver ends (prepare_output_dir).
  /// Throws InputError.
  void prepare_output() {
    journal_path_ = (out_ / naming_.journal_name).string();
    PreparedOutput prepared = prepare_output_dir(out_, out_.string(), naming_, resume_, journal_);
    output_lock_ = std::move(prepared.lock);
    run_options_.journal.path = std::move(prepared.journal_path);
  }

  /// Runs the conversion. The journal keys a row by its input's stem plus `key_suffix` (the
  /// options that shape an output, so an input converted with others is converted again);
  /// failures.jsonl names a row by input_field and input. `deliver` gets each output; after
  /// it, `on_written` learns which rows this run computed (restored rows are only counted).
  /// `report_section` is asked once, when the run ends, with the tally so far.
  void run(std::string key_suffix, std::function<void(std::size_t, const Value&)> deliver,
           std::function<void(std::size_t)> on_written,
           std::function<std::string(const ConvertTally<Failure>&)> report_section) {
    rayorch::RunOptions options = run_options_;
    options.journal.key = [&](std::size_t row) { return stems_[row] + key_suffix; };
    options.journal.allow_other_inputs = true;  // a directory may gain inputs
    options.dead_letters = failures_path();
    options.dead_letter_fields = [&](std::size_t row) {
      return std::vector<std::pair<std::string, std::string>>{
          {std::string(naming_.input_field), stems_[row]}, {"input", files_[row]}};
    };
    if (sink_format_) {
      options.sink.directory = out_.string();
      options.sink.format = sink_format_;
      options.sink.rows_per_part = sink_rows_per_part_;
      options.sink.max_part_age = sink_max_part_age_;
    }
    const auto start = Clock::now();
    // Which delivered inputs were computed and which restored: on_root follows each delivery.
    options.observers.push_back(std::make_shared<RootObserver>([&](const rayorch::RootEvent& e) {
      if (e.outcome != rayorch::Outcome::present) return;
      if (e.restored) {
        tally_.restored.push_back(stems_[e.row]);
        return;
      }
      if (tally_.written.empty()) tally_.first_written_seconds = seconds_since(start);
      tally_.written.push_back(stems_[e.row]);
      on_written(e.row);
    }));
    options.observers.push_back(
        std::make_shared<ReportSectionObserver>(std::string(naming_.report_name), [&] {
          tally_.run_seconds = seconds_since(start);
          std::sort(tally_.restored.begin(), tally_.restored.end());
          return report_section(tally_);
        }));
    rayorch::RunResult<Value> result;
    try {
      result = executor_->run(files_, options, [&](std::size_t row, rayorch::Output<Value> out) {
        if (out.ok()) {
          deliver(row, out.value());
          return;
        }
        const rayorch::OutputIssue& issue = out.issue();
        if (issue.outcome == rayorch::Outcome::dropped) {
          tally_.dropped.push_back(stems_[row]);
          return;
        }
        tally_.failures.push_back(Failure{
            stems_[row], files_[row], std::string(rayorch::to_string(issue.outcome)), issue.cause});
      });
    } catch (const std::invalid_argument& e) {
      throw unusable_run_files(e, journal_path_, naming_);
    } catch (...) {
      draw_report_page();  // an aborted run's report says so; its page too
      throw;
    }
    draw_report_page();
    tally_.run_seconds = seconds_since(start);
    tally_.stages = stage_summaries(result.metrics);
    std::sort(tally_.restored.begin(), tally_.restored.end());
    std::sort(tally_.dropped.begin(), tally_.dropped.end());
    std::sort(tally_.failures.begin(), tally_.failures.end(),
              [&](const Failure& a, const Failure& b) { return a.*name_of_ < b.*name_of_; });
  }

  /// The report page written beside the JSON report, or empty (none asked for).
  const std::filesystem::path& report_page() const { return report_page_; }
  const std::vector<std::string>& files() const { return files_; }
  const std::vector<std::string>& stems() const { return stems_; }
  const std::filesystem::path& out() const { return out_; }
  std::string failures_path() const { return (out_ / "failures.jsonl").string(); }
  const ConvertTally<Failure>& tally() const { return tally_; }

 private:
  // The report page, drawn from the report the run just wrote. A page that cannot be drawn
  // costs the run nothing: the outputs and the JSON report stand, and stderr says why.
  void draw_report_page() const {
    if (report_page_.empty()) return;
    try {
      rayorch::write_report_page(run_options_.report_path, report_page_.string());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "the report page %s was not written: %s\n", report_page_.c_str(),
                   e.what());
    }
  }

  ConvertNaming naming_;
  std::vector<std::string> files_;
  std::vector<std::string> stems_;
  std::filesystem::path out_;
  std::string Failure::*name_of_;
  rayorch::RunOptions run_options_;
  bool resume_;
  bool journal_;
  std::filesystem::path report_page_;  // empty: none
  std::string journal_path_;
  OutputLock output_lock_;  // held from prepare_output() to the driver's end
  std::optional<rayorch::Executor<Pipeline>> executor_;
  std::shared_ptr<const rayorch::PartFormat> sink_format_;  // none: the workload writes
  std::size_t sink_rows_per_part_ = 1;
  std::chrono::milliseconds sink_max_part_age_{0};
  ConvertTally<Failure> tally_;
};

/// Copies the tally into a workload's summary: failures, dropped, startup_seconds, run_seconds
/// and stages into the fields of those names, the rest into the fields the workload names.
template <class Summary, class Failure>
void copy_tally(const ConvertTally<Failure>& t, Summary& s,
                std::vector<std::string> Summary::*written,
                std::vector<std::string> Summary::*restored,
                double Summary::*first_written_seconds) {
  s.*written = t.written;
  s.*restored = t.restored;
  s.*first_written_seconds = t.first_written_seconds;
  s.failures = t.failures;
  s.dropped = t.dropped;
  s.startup_seconds = t.startup_seconds;
  s.run_seconds = t.run_seconds;
  s.stages = t.stages;
}

/// ", N dropped on purpose" for a summary's first line, or nothing when none was.
inline std::string dropped_on_purpose(std::size_t dropped) {
  return dropped == 0 ? std::string() : fmt::format(", {} dropped on purpose", dropped);
}

/// The closing lines of a run summary: the first finished input (`noun`: "document";
/// `first_seconds` < 0: none), the stages, `outputs` (where the outputs are, one line), and
/// the failures with their causes.
template <class Failure>
std::string format_summary_tail(std::string_view noun, double first_seconds,
                                const std::vector<StageSummary>& stages, std::string_view outputs,
                                const std::vector<Failure>& failures,
                                const std::string& failures_path, std::string Failure::*name_of) {
  std::string out;
  if (first_seconds >= 0) {
    out += fmt::format("first finished {} after {:.2f} s\n", noun, first_seconds);
  }
  out += format_stages(stages);
  out += outputs;
  if (!failures.empty()) {
    out += fmt::format("failures ({}), listed in {}:\n", failures.size(), failures_path);
    for (const Failure& f : failures) {
      out += fmt::format("  {} ({}): {}\n", f.*name_of, f.outcome, f.cause);
    }
  }
  return out;
}

}  // namespace workloads
