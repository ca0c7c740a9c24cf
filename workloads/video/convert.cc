// Videos -> OUT_DIR/videos-NNNNN.jsonl. See convert.h.
#include "video/convert.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "common/convert_driver.h"
#include "common/files.h"
#include "video/output.h"
#include "video/record_json.h"
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace video {
namespace fs = std::filesystem;

namespace {

constexpr workloads::ConvertNaming kNaming{
    .probe_prefix = ".video2jsonl-probe-",
    .temp_infix = kTempInfix,
    .journal_name = ".video2jsonl-journal",
    .report_name = "video2jsonl",
    .input_field = "video",
    .redo = "process every video again",
};

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

std::vector<std::string> resolve_inputs(const workloads::InputSelection& inputs) {
  static const workloads::InputRules rules{
      video_extensions(),
      "no input given: name video files, folders or glob patterns, or a --manifest",
      fmt::format("no video files found in the inputs (looked for {})",
                  fmt::join(video_extensions(), " ")),
      [](const std::string& stem, const std::string& first, const std::string& second) {
        return fmt::format(
            "duplicate video name '{}': {} and {} would both have records named '{}'; rename "
            "one of them or process them into different output directories",
            stem, first, second, stem);
      }};
  return workloads::select_inputs(inputs, rules);
}

ConvertSummary convert(const ConvertOptions& options) {
  // Everything that can be wrong with the command is checked before anything is written.
  workloads::ConvertDriver<VideoPipeline, FailedVideo> driver(
      kNaming, options, resolve_inputs(options.inputs), &FailedVideo::video);
  std::optional<ro::Compiled<VideoPipeline>> program;
  try {
    program.emplace(compile_pipeline(options.pipeline));
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("invalid option: {}", e.what()));
  } catch (const ro::CompileError& e) {
    throw InputError(fmt::format("invalid stage option: {}", e.what()));
  }
  // The engines load before the output directory is created, so a missing OCR language
  // leaves nothing behind.
  driver.start_engines(*program);
  driver.prepare_output();

  ConvertSummary summary;
  summary.videos = driver.files().size();
  summary.records_dir = driver.out().string();
  summary.failures_path = driver.failures_path();
  const auto take_tally = [&](const workloads::ConvertTally<FailedVideo>& t) {
    workloads::copy_tally(t, summary, &ConvertSummary::written, &ConvertSummary::restored,
                          &ConvertSummary::first_video_seconds);
  };
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
  // Records in JSON-lines parts committed with the journal (docs/IO.md): a part holds up to
  // 64 videos and is committed at the latest when a video finishes 10 s after its first, so
  // a crash costs at most that much finished work and a resume writes each video once.
  driver.write_through(rayorch::jsonl_parts(
                           [](const rayorch::SinkRoot& root, std::string& line) {
                             line += to_json_line(root.as<VideoRecord>().value());
                           },
                           "videos"),
                       64, std::chrono::seconds(10));
  std::vector<std::pair<std::size_t, std::size_t>> counts(driver.files().size());  // scenes, frames
  driver.run(
      key_suffix,
      [&](std::size_t row, const VideoRecord& record) {
        counts[row].first = record.scenes.size();
        for (const SceneRecord& s : record.scenes) counts[row].second += s.frames.size();
      },
      [&](std::size_t row) {
        summary.scenes += counts[row].first;
        summary.frames_analysed += counts[row].second;
      },
      [&](const workloads::ConvertTally<FailedVideo>& t) {
        take_tally(t);
        return report_section(summary, options.pipeline).dump();
      });
  take_tally(driver.tally());
  return summary;
}

std::string format_summary(const ConvertSummary& s) {
  std::string out = fmt::format("video2jsonl: {} videos: {} written, {} failed", s.videos,
                                s.written.size(), s.failures.size());
  if (!s.restored.empty()) out += fmt::format(", {} restored from the journal", s.restored.size());
  out += workloads::dropped_on_purpose(s.dropped.size()) + "\n";
  if (s.run_seconds > 0) {
    out += fmt::format(
        "scenes: {}, frames analysed: {} in {:.2f} s = {:.2f} videos/s (engine startup {:.2f} "
        "s)\n",
        s.scenes, s.frames_analysed, s.run_seconds,
        static_cast<double>(s.written.size()) / s.run_seconds, s.startup_seconds);
  }
  out += workloads::format_summary_tail(
      "video", s.first_video_seconds, s.stages,
      fmt::format("records: {}/videos-*.jsonl (the parts {}/_manifest.json lists)\n", s.records_dir,
                  s.records_dir),
      s.failures, s.failures_path, &FailedVideo::video);
  return out;
}

}  // namespace video
