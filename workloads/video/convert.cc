// Videos -> OUT_DIR/videos.jsonl. See convert.h.
#include "video/convert.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "video/output.h"
#include "video/record_json.h"
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace video {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool is_video_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto& known = video_extensions();
  return std::find(known.begin(), known.end(), ext) != known.end();
}

void require_readable(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    throw InputError(fmt::format("cannot read input {}: {}", p.string(), std::strerror(errno)));
  }
}

// Creating a file is the only reliable writability test (permissions, read-only mounts,
// quotas and ACLs all show up here).
void require_writable_dir(const fs::path& dir, const std::string& what) {
  std::string probe = (dir / ".video2jsonl-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    throw InputError(fmt::format("{} {} is not writable: {}", what,
                                 dir.empty() ? "." : dir.string(), std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

void require_output_file_location(const std::string& path, const std::string& what) {
  if (path.empty()) return;
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) {
    throw InputError(
        fmt::format("{} {}: directory {} does not exist", what, path, parent.string()));
  }
  require_writable_dir(parent, what + " directory");
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
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

// Extends the engine's report with what the conversion did.
void write_report(const std::string& path, const ConvertSummary& s, const PipelineConfig& c) {
  nlohmann::json report = nlohmann::json::parse(read_file(path), nullptr, false);
  if (report.is_discarded() || !report.is_object()) report = nlohmann::json::object();
  nlohmann::json failed = nlohmann::json::array();
  for (const FailedVideo& f : s.failures) {
    failed.push_back({{"video", f.video}, {"outcome", f.outcome}, {"cause", f.cause}});
  }
  report["video2jsonl"] = {
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
  write_file_atomically(path, report.dump(2) + "\n");
}

}  // namespace

const std::vector<std::string>& video_extensions() {
  static const std::vector<std::string> known = {".mp4", ".m4v",  ".mov", ".mkv", ".webm", ".avi",
                                                 ".mpg", ".mpeg", ".ts",  ".flv", ".wmv"};
  return known;
}

std::vector<std::string> resolve_inputs(const std::vector<std::string>& inputs) {
  if (inputs.empty()) throw InputError("no input given: name video files or directories");
  std::map<std::string, std::string> by_identity;  // canonical path -> path as found
  for (const std::string& input : inputs) {
    const fs::path p(input);
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) throw InputError(fmt::format("input not found: {}", input));
    std::vector<fs::path> found;
    if (fs::is_directory(st)) {
      fs::recursive_directory_iterator it(p, fs::directory_options::follow_directory_symlink, ec);
      for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        std::error_code fec;
        if (it->is_regular_file(fec) && is_video_name(it->path())) found.push_back(it->path());
      }
      if (ec) {
        throw InputError(fmt::format("cannot read input directory {}: {}", input, ec.message()));
      }
    } else if (fs::is_regular_file(st)) {
      found.push_back(p);
    } else {
      throw InputError(fmt::format("input {} is neither a file nor a directory", input));
    }
    for (const fs::path& f : found) {
      require_readable(f);
      std::error_code cec;
      fs::path id = fs::weakly_canonical(f, cec);
      if (cec) id = fs::absolute(f);
      by_identity.emplace(id.string(), f.lexically_normal().string());
    }
  }
  std::vector<std::string> files;
  for (auto& [id, path] : by_identity) files.push_back(path);
  std::sort(files.begin(), files.end());
  std::map<std::string, std::string> by_stem;
  for (const std::string& f : files) {
    const std::string stem = fs::path(f).stem().string();
    auto [it, inserted] = by_stem.emplace(stem, f);
    if (!inserted) {
      throw InputError(fmt::format(
          "duplicate video name '{}': {} and {} would both have records named '{}'; rename one "
          "of them or process them into different output directories",
          stem, it->second, f, stem));
    }
  }
  if (files.empty()) {
    throw InputError(fmt::format("no video files found in the inputs (looked for {})",
                                 fmt::join(video_extensions(), " ")));
  }
  return files;
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
  {
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec || !fs::is_directory(out)) {
      throw InputError(fmt::format("cannot create output directory {}: {}", options.out_dir,
                                   ec ? ec.message() : "a file of that name exists"));
    }
  }
  require_writable_dir(out, "output directory");
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
  ro::RunOptions run_options;
  run_options.input_batch_size = options.input_batch_size;
  run_options.max_active_input_batches = options.max_active_input_batches;
  run_options.progress = options.progress;
  run_options.trace_path = options.trace_path;
  run_options.report_path = options.report_path;
  const auto start = Clock::now();
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
  for (const ro::CallMetrics& m : result.metrics.calls) {
    summary.stages.push_back(StageSummary{m.call, m.rpcs, m.grain_dispatches, m.busy_seconds});
  }
  std::sort(summary.failures.begin(), summary.failures.end(),
            [](const FailedVideo& a, const FailedVideo& b) { return a.video < b.video; });
  write_failures(summary);
  if (!options.report_path.empty()) write_report(options.report_path, summary, options.pipeline);
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
  if (!s.stages.empty()) {
    out += "stages:";
    for (const StageSummary& st : s.stages) {
      out += fmt::format(" {} {} rpcs/{} grains busy {:.2f} s;", st.call, st.rpcs, st.grains,
                         st.busy_seconds);
    }
    out.back() = '\n';
  }
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
