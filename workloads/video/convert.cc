// Videos -> OUT_DIR/videos.jsonl. See convert.h.
#include "video/convert.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include "common/files.h"
#include "common/run_summary.h"
#include "video/output.h"
#include "video/record_json.h"
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace video {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

using workloads::seconds_since;

// Probe files that test a directory's writability carry this prefix.
constexpr std::string_view kProbePrefix = ".video2jsonl-probe-";

void require_output_file_location(const std::string& path, const std::string& what) {
  workloads::require_output_file_location(path, what, kProbePrefix);
}

// The run journal in the output directory (--resume).
constexpr const char* kJournalName = ".video2jsonl-journal";

// What the conversion did, as the "video2jsonl" section of the engine's JSON report.
nlohmann::json report_section(const ConvertSummary& s, const PipelineConfig& c) {
  std::vector<FailedVideo> failures = s.failures;
  std::sort(failures.begin(), failures.end(),
            [](const FailedVideo& a, const FailedVideo& b) { return a.video < b.video; });
  nlohmann::json failed = nlohmann::json::array();
  for (const FailedVideo& f : failures) {
    failed.push_back({{"video", f.video}, {"outcome", f.outcome}, {"cause", f.cause}});
  }
  return {
      {"videos", s.videos},
      {"written", s.written},
      {"restored", s.restored},
      {"failed", failed},
      {"scenes", s.scenes},
      {"frames_analysed", s.frames_analysed},
      {"startup_seconds", s.startup_seconds},
      {"run_seconds", s.run_seconds},
      {"videos_per_second",
       s.run_seconds > 0 ? static_cast<double>(s.written.size()) / s.run_seconds : 0.0},
      {"first_video_seconds", s.first_video_seconds},
      {"cut_method", c.detection.method == CutMethod::content ? "content" : "threshold"},
      {"scene_threshold", c.detection.threshold},
      {"sampling", {{"every", c.sampling.every}, {"per_scene", c.sampling.per_scene}}},
      {"frame_width", c.frame_width},
  };
}

}  // namespace

const std::vector<std::string>& video_extensions() {
  static const std::vector<std::string> known = {".mp4", ".m4v",  ".mov", ".mkv", ".webm", ".avi",
                                                 ".mpg", ".mpeg", ".ts",  ".flv", ".wmv"};
  return known;
}

std::vector<std::string> resolve_inputs(const std::vector<std::string>& inputs) {
  static const workloads::InputRules rules{
      video_extensions(), "no input given: name video files or directories",
      fmt::format("no video files found in the inputs (looked for {})",
                  fmt::join(video_extensions(), " ")),
      [](const std::string& stem, const std::string& first, const std::string& second) {
        return fmt::format(
            "duplicate video name '{}': {} and {} would both have records named '{}'; rename "
            "one of them or process them into different output directories",
            stem, first, second, stem);
      }};
  return workloads::resolve_inputs(inputs, rules);
}

ConvertSummary convert(const ConvertOptions& options) {
  // Everything that can be wrong with the command is checked before anything is written.
  const std::vector<std::string> files = resolve_inputs(options.inputs);
  if (options.out_dir.empty()) throw InputError("no output directory given");
  std::optional<ro::Compiled<VideoPipeline>> program;
  try {
    program.emplace(compile_pipeline(options.pipeline));
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("invalid option: {}", e.what()));
  } catch (const ro::CompileError& e) {
    throw InputError(fmt::format("invalid stage option: {}", e.what()));
  }
  require_output_file_location(options.trace_path, "trace file");
  require_output_file_location(options.report_path, "report file");

  // The engines load before the output directory is created, so a missing OCR language
  // leaves nothing behind.
  const auto startup = Clock::now();
  std::optional<ro::Executor<VideoPipeline>> built;
  try {
    built.emplace(*program);
  } catch (const ro::ExecutionError& e) {
    // Nothing has run yet: an engine that cannot load is a problem with the command, not a
    // failed run.
    throw InputError(fmt::format("cannot start the pipeline: {}", e.what()));
  }
  const double startup_seconds = seconds_since(startup);

  const fs::path out(options.out_dir);
  workloads::create_output_dir(out, options.out_dir, kProbePrefix);
  remove_stale_temporaries(out.string());

  ConvertSummary summary;
  summary.videos = files.size();
  summary.startup_seconds = startup_seconds;
  summary.records_path = (out / "videos.jsonl").string();
  summary.failures_path = (out / "failures.jsonl").string();
  std::vector<std::string> stems;
  for (const std::string& f : files) stems.push_back(fs::path(f).stem().string());

  const std::string journal_path = (out / kJournalName).string();
  const std::string journal =
      workloads::prepare_run_journal(out, kJournalName, options.resume, options.journal);
  JsonlAppender records(summary.records_path);
  ro::RunOptions run_options = workloads::run_options_of(options);
  run_options.journal.path = journal;
  // The key names the options that shape a record too: a video processed with others is not
  // restored but processed again.
  const PipelineConfig& pc = options.pipeline;
  const std::string key_suffix = fmt::format(
      "|method={}|threshold={}|analysis_width={}|ratio={}|min_score={}|min_scene={}|"
      "transition={}|every={}|per_scene={}|frame_width={}|bits={}|lang={}|tessdata={}",
      static_cast<int>(pc.detection.method), pc.detection.threshold, pc.detection.width(),
      pc.detection.adaptive_ratio, pc.detection.min_score, pc.detection.min_scene_seconds,
      pc.detection.max_transition_seconds, pc.sampling.every, pc.sampling.per_scene, pc.frame_width,
      pc.near_duplicate_bits, pc.lang, pc.tessdata);
  run_options.journal.key = [&](std::size_t row) { return stems[row] + key_suffix; };
  run_options.journal.allow_other_inputs = true;  // a directory may gain videos
  run_options.dead_letters = summary.failures_path;
  run_options.dead_letter_fields = [&](std::size_t row) {
    return std::vector<std::pair<std::string, std::string>>{{"video", stems[row]},
                                                            {"input", files[row]}};
  };
  const auto start = Clock::now();
  // Which delivered videos were processed and which restored: on_root follows each delivery.
  std::vector<std::pair<std::size_t, std::size_t>> counts(files.size());  // scenes, frames
  run_options.observers.push_back(
      std::make_shared<workloads::RootObserver>([&](const ro::RootEvent& e) {
        if (e.outcome != ro::Outcome::present) return;
        if (e.restored) {
          summary.restored.push_back(stems[e.row]);
          return;
        }
        if (summary.written.empty()) summary.first_video_seconds = seconds_since(start);
        summary.written.push_back(stems[e.row]);
        summary.scenes += counts[e.row].first;
        summary.frames_analysed += counts[e.row].second;
      }));
  run_options.observers.push_back(
      std::make_shared<workloads::ReportSectionObserver>("video2jsonl", [&] {
        summary.run_seconds = seconds_since(start);
        return report_section(summary, options.pipeline).dump();
      }));
  ro::RunResult<VideoRecord> result;
  try {
    result = built->run(files, run_options, [&](std::size_t row, ro::Output<VideoRecord> v) {
      if (v.ok()) {
        const VideoRecord& record = v.value();
        records.append(to_json_line(record));
        counts[row].first = record.scenes.size();
        for (const SceneRecord& s : record.scenes) counts[row].second += s.frames.size();
      } else {
        const ro::OutputIssue& issue = v.issue();
        summary.failures.push_back(FailedVideo{
            stems[row], files[row], std::string(ro::to_string(issue.outcome)), issue.cause});
      }
    });
  } catch (const std::invalid_argument& e) {
    // Raised before anything ran: the journal or the failure list cannot be used.
    if (std::string_view(e.what()).find("another pipeline") != std::string_view::npos) {
      throw InputError(
          fmt::format("cannot resume: the run journal {} was written by another version of the "
                      "pipeline; rerun without --resume to process every video again",
                      journal_path));
    }
    throw InputError(e.what());
  }
  summary.run_seconds = seconds_since(start);
  summary.stages = workloads::stage_summaries(result.metrics);
  std::sort(summary.restored.begin(), summary.restored.end());
  std::sort(summary.failures.begin(), summary.failures.end(),
            [](const FailedVideo& a, const FailedVideo& b) { return a.video < b.video; });
  return summary;
}

std::string format_summary(const ConvertSummary& s) {
  std::string out = fmt::format("video2jsonl: {} videos: {} written, {} failed", s.videos,
                                s.written.size(), s.failures.size());
  out += s.restored.empty() ? std::string("\n")
                            : fmt::format(", {} restored from the journal\n", s.restored.size());
  if (s.run_seconds > 0) {
    out += fmt::format(
        "scenes: {}, frames analysed: {} in {:.2f} s = {:.2f} videos/s (engine startup {:.2f} "
        "s)\n",
        s.scenes, s.frames_analysed, s.run_seconds,
        static_cast<double>(s.written.size()) / s.run_seconds, s.startup_seconds);
  }
  if (s.first_video_seconds >= 0) {
    out += fmt::format("first finished video after {:.2f} s\n", s.first_video_seconds);
  }
  out += workloads::format_stages(s.stages);
  out += fmt::format("records: {}\n", s.records_path);
  if (!s.failures.empty()) {
    out += fmt::format("failures ({}), listed in {}:\n", s.failures.size(), s.failures_path);
    for (const FailedVideo& f : s.failures) {
      out += fmt::format("  {} ({}): {}\n", f.video, f.outcome, f.cause);
    }
  }
  return out;
}

}  // namespace video
