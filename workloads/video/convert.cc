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

void write_failures(const ConvertSummary& s) {
  std::string jsonl;
  for (const FailedVideo& f : s.failures) {
    jsonl +=
        nlohmann::json{
            {"video", f.video}, {"input", f.input}, {"outcome", f.outcome}, {"cause", f.cause}}
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    jsonl += '\n';
  }
  write_file_atomically(s.failures_path, jsonl);
}

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
      {"failed", failed},
      {"scenes", s.scenes},
      {"frames_analysed", s.frames_analysed},
      {"startup_seconds", s.startup_seconds},
      {"run_seconds", s.run_seconds},
      {"videos_per_second",
       s.run_seconds > 0 ? static_cast<double>(s.written.size()) / s.run_seconds : 0.0},
      {"first_video_seconds", s.first_video_seconds},
      {"scene_threshold", c.scene_threshold},
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

  // A failure list from an earlier run would describe videos this run has not finished;
  // until this run's list is written at the end, there is none.
  {
    std::error_code ec;
    fs::remove(summary.failures_path, ec);
  }
  JsonlAppender records(summary.records_path);
  ro::RunOptions run_options = workloads::run_options_of(options);
  const auto start = Clock::now();
  run_options.observers.push_back(
      std::make_shared<workloads::ReportSectionObserver>("video2jsonl", [&] {
        summary.run_seconds = seconds_since(start);
        return report_section(summary, options.pipeline).dump();
      }));
  auto result = built->run(files, run_options, [&](std::size_t row, ro::Output<VideoRecord> v) {
    if (v.ok()) {
      const VideoRecord& record = v.value();
      records.append(to_json_line(record));
      if (summary.written.empty()) summary.first_video_seconds = seconds_since(start);
      summary.written.push_back(stems[row]);
      summary.scenes += record.scenes.size();
      for (const SceneRecord& s : record.scenes) summary.frames_analysed += s.frames.size();
    } else {
      const ro::OutputIssue& issue = v.issue();
      summary.failures.push_back(FailedVideo{
          stems[row], files[row], std::string(ro::to_string(issue.outcome)), issue.cause});
    }
  });
  summary.run_seconds = seconds_since(start);
  summary.stages = workloads::stage_summaries(result.metrics);
  std::sort(summary.failures.begin(), summary.failures.end(),
            [](const FailedVideo& a, const FailedVideo& b) { return a.video < b.video; });
  write_failures(summary);
  return summary;
}

std::string format_summary(const ConvertSummary& s) {
  std::string out = fmt::format("video2jsonl: {} videos: {} written, {} failed\n", s.videos,
                                s.written.size(), s.failures.size());
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
