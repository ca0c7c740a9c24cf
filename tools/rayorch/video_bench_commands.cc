// `rayorch bench video`: the video workload end to end on generated videos. Frames and videos
// per second against the physical limit (the stages' busy time spread over the cores), peak
// RSS of a corpus, of the same corpus 4x longer and of 4x as many videos (each in its own
// forked process), and a scripted baseline doing the same work with the FFmpeg and Tesseract
// command-line tools.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "video/convert.h"
#include "video/output.h"
#include "video/record_json.h"
#include "video/samples.h"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <rayorch/sink_reader.h>

namespace rayorch::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct VideoBenchOptions {
  bool quick = false;
  bool json = false;
  std::string work_dir;  ///< empty: a fresh directory under the system's temporary directory
  int videos = 16;       ///< throughput corpus
  std::uint64_t seed = 1;
  int frames_per_scene = 3;
  int rss_videos = 4;         ///< videos of the base RSS corpus
  int rss_scene_frames = 30;  ///< frames per scene of the short RSS corpus (the long: 4x)
  int rss_every = 10;         ///< sampling of the RSS corpora: work grows with length
  int replicas = 0;           ///< OCR actors; 0: one per core
  int baseline_parallel = 2;  ///< videos processed at once by the CLI baseline
};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int cores() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

video::ConvertOptions convert_options(const VideoBenchOptions& o, const std::string& in,
                                      const std::string& out) {
  video::ConvertOptions c;
  c.inputs.paths = {in};
  c.out_dir = out;
  c.progress = false;
  c.pipeline.sampling.per_scene = o.frames_per_scene;
  c.pipeline.ocr.replicas = o.replicas > 0 ? o.replicas : cores();
  c.pipeline.decode.replicas = std::max(1, cores() / 4);
  return c;
}

// The peak RSS (MiB) of a forked child that converts `in`; the kernel's high-water mark of
// the child (wait4's ru_maxrss), so the parent's own history does not count.
double peak_rss_of_conversion(const video::ConvertOptions& c, std::string& error) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    int code = 0;
    try {
      const video::ConvertSummary s = video::convert(c);
      code = s.failures.empty() ? 0 : 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench video: %s\n", e.what());
      code = 2;
    }
    std::fflush(nullptr);
    _exit(code);  // no static destructors: they belong to the parent's copy
  }
  int status = 0;
  struct rusage ru {};
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    error = WIFEXITED(status) ? fmt::format("the conversion exited with {}", WEXITSTATUS(status))
                              : fmt::format("the conversion died of signal {}", WTERMSIG(status));
  }
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

bool on_path(const char* tool) {
  return std::system(fmt::format("command -v {} > /dev/null 2>&1", tool).c_str()) == 0;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'')
      out += "'\\''";
    else
      out += ch;
  }
  return out + "'";
}

// The same work per video with the command-line tools: one FFmpeg pass that decodes every
// frame for scene detection, one that extracts the frames the pipeline sampled (gray, at
// its frame width), and one Tesseract process that reads them all. Returns the wall time.
double run_cli_baseline(const std::vector<video::VideoRecord>& records, const fs::path& dir,
                        int frame_width, int parallel, std::size_t& failed) {
  std::atomic<std::size_t> next{0}, bad{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < records.size(); i = next++) {
      const video::VideoRecord& r = records[i];
      const fs::path frames = dir / r.info.stem;
      fs::create_directories(frames);
      std::string select;
      for (const auto& s : r.scenes) {
        for (const auto& f : s.frames) {
          if (!select.empty()) select += "+";
          select += fmt::format("eq(n\\,{})", f.frame);
        }
      }
      const std::string in = shell_quote(r.info.path);
      std::string script = fmt::format(
          "ffmpeg -nostdin -v error -threads 1 -i {} -vf \"select='gt(scene\\,0.1)'\" -f null - "
          "&& ffmpeg -nostdin -v error -threads 1 -i {} -vf \"select='{}',scale='min({},iw)':-2,"
          "format=gray\" -fps_mode passthrough {}/%04d.png",
          in, in, select, frame_width, shell_quote(frames.string()));
      // One tesseract process per video, over the list of its frames.
      script += fmt::format(
          " && ls {0}/*.png > {0}.txt && OMP_THREAD_LIMIT=1 tesseract {0}.txt - --psm 6 "
          "> {0}.out 2> /dev/null",
          shell_quote(frames.string()));
      std::size_t wanted = 0, extracted = 0;
      for (const auto& sc : r.scenes) wanted += sc.frames.size();
      if (std::system(("sh -c " + shell_quote(script)).c_str()) == 0) {
        for (const auto& e : fs::directory_iterator(frames)) {
          extracted += e.path().extension() == ".png" ? 1 : 0;
        }
      }
      // Exactly the sampled frames, or the baseline did other work than the pipeline.
      if (extracted != wanted) ++bad;
    }
  };
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < parallel; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  failed = bad;
  return seconds_since(start);
}

void run_video_bench(const VideoBenchOptions& o) {
  fs::path work = o.work_dir.empty()
                      ? fs::temp_directory_path() / fmt::format("rayorch-bench-video-{}", getpid())
                      : fs::path(o.work_dir);
  const bool temporary = o.work_dir.empty();
  fs::remove_all(work / "corpus");
  fs::remove_all(work / "out");
  fs::remove_all(work / "rss");
  fs::remove_all(work / "baseline");
  fs::create_directories(work);
  nlohmann::json j;
  std::string text;
  bool ok = true;

  // Peak RSS of a corpus, of the same scenes 4x longer and of 4x as many videos, each
  // corpus in its own process.
  struct RssCase {
    const char* name;
    int length;
    int count;
  };
  nlohmann::json rss = nlohmann::json::array();
  std::vector<double> peaks;
  for (const RssCase& rc : {RssCase{"base", 1, 1}, RssCase{"4x longer videos", 4, 1},
                            RssCase{"4x as many videos", 1, 4}}) {
    video::CorpusOptions k;
    k.videos = o.rss_videos * rc.count;
    k.seed = o.seed;
    k.corrupt = 0;
    k.max_scenes = 4;
    k.min_scene_frames = k.max_scene_frames = o.rss_scene_frames * rc.length;
    const std::string tag = fmt::format("length{}-count{}", rc.length, rc.count);
    const fs::path in = work / "rss" / tag;
    const video::VideoCorpus corpus = video::make_videos(in.string(), k);
    video::ConvertOptions c =
        convert_options(o, in.string(), (work / "rss" / ("out-" + tag)).string());
    c.pipeline.sampling = {.every = o.rss_every, .per_scene = 0};
    std::string error;
    const double peak = peak_rss_of_conversion(c, error);
    if (!error.empty()) {
      ok = false;
      text += fmt::format("rss {}: {}\n", rc.name, error);
    }
    peaks.push_back(peak);
    rss.push_back({{"case", rc.name},
                   {"length_factor", rc.length},
                   {"count_factor", rc.count},
                   {"videos", corpus.videos.size()},
                   {"frames", corpus.total_frames()},
                   {"peak_rss_mib", peak},
                   {"vs_base", peak / peaks.front()}});
    text +=
        fmt::format("peak RSS, {}: {} videos, {} frames in all: {:.1f} MiB ({:.2f}x)\n", rc.name,
                    corpus.videos.size(), corpus.total_frames(), peak, peak / peaks.front());
  }
  j["rss"] = rss;
  text += "  target: flat (<= 1.2x the base) as videos grow longer or more numerous\n";

  // Throughput on the default-shaped corpus.
  video::CorpusOptions k;
  k.videos = o.videos;
  k.seed = o.seed;
  const video::VideoCorpus corpus = video::make_videos((work / "corpus").string(), k);
  const video::ConvertOptions c =
      convert_options(o, (work / "corpus").string(), (work / "out").string());
  const video::ConvertSummary s = video::convert(c);
  if (s.written.size() != corpus.videos.size() || s.failures.size() != corpus.corrupt.size()) {
    ok = false;
    text += fmt::format("unexpected outcome: {} written, {} failed\n", s.written.size(),
                        s.failures.size());
  }
  double busy = 0;
  for (const auto& st : s.stages) busy += st.busy_seconds;
  const double limit_seconds = busy / cores();
  const double decoded = static_cast<double>(corpus.total_frames());
  const double sampled = static_cast<double>(s.frames_analysed);
  const double videos = static_cast<double>(s.written.size());
  j["throughput"] = {{"videos", s.written.size()},
                     {"frames_decoded", corpus.total_frames()},
                     {"frames_sampled", s.frames_analysed},
                     {"scenes", s.scenes},
                     {"cores", cores()},
                     {"ocr_replicas", c.pipeline.ocr.replicas},
                     {"startup_s", s.startup_seconds},
                     {"run_s", s.run_seconds},
                     {"first_video_s", s.first_video_seconds},
                     {"busy_s", busy},
                     {"limit_s", limit_seconds}};
  text += fmt::format(
      "end to end, {} videos ({} scenes, {:.0f} frames decoded, {:.0f} sampled), {} cores, {} "
      "OCR actors:\n"
      "  run {:.2f} s (+ {:.2f} s engine start-up), first video after {:.2f} s\n"
      "  {:.1f} videos/s, {:.1f} decoded frames/s, {:.1f} sampled frames/s\n"
      "  physical limit (stage busy time {:.2f} s / {} cores = {:.2f} s): {:.1f} sampled "
      "frames/s; the run reached {:.0f}% of it\n",
      s.written.size(), s.scenes, decoded, sampled, cores(), c.pipeline.ocr.replicas, s.run_seconds,
      s.startup_seconds, s.first_video_seconds, videos / s.run_seconds, decoded / s.run_seconds,
      sampled / s.run_seconds, busy, cores(), limit_seconds,
      limit_seconds > 0 ? sampled / limit_seconds : 0,
      s.run_seconds > 0 ? 100.0 * limit_seconds / s.run_seconds : 0);
  text += workloads::format_stages(s.stages);

  // The command-line baseline on the same videos and the same sampled frames.
  if (!on_path("ffmpeg") || !on_path("tesseract")) {
    text += fmt::format(
        "baseline skipped: {} not found on PATH (Debian packages ffmpeg, "
        "tesseract-ocr)\n",
        on_path("ffmpeg") ? "tesseract" : "ffmpeg");
    j["baseline"] = nullptr;
  } else {
    std::vector<video::VideoRecord> records;
    for (const std::string& line : rayorch::read_committed_lines(s.records_dir))
      records.push_back(video::parse_json_line(line));
    std::size_t failed = 0;
    const double t = run_cli_baseline(records, work / "baseline", c.pipeline.frame_width,
                                      o.baseline_parallel, failed);
    if (failed != 0) {
      ok = false;
      text += fmt::format("baseline: {} videos failed\n", failed);
    }
    j["baseline"] = {{"parallel", o.baseline_parallel}, {"seconds", t}, {"failed", failed}};
    text += fmt::format(
        "baseline (per video: ffmpeg scene pass, ffmpeg frame extraction, one tesseract over "
        "the frames; {} videos at a "
        "time): {:.2f} s, {:.1f} videos/s, {:.1f} sampled frames/s; this run is {:.2f}x faster\n",
        o.baseline_parallel, t, videos / t, sampled / t, t / s.run_seconds);
  }
  if (temporary) fs::remove_all(work);

  if (o.json)
    std::cout << j.dump(2) << "\n";
  else
    std::cout << text;
  std::cout.flush();
  if (!ok) {
    std::fprintf(stderr, "rayorch bench video: a run did not give the expected outcome\n");
    throw CLI::RuntimeError(kSomeFailed);
  }
}

}  // namespace

void add_video_bench_command(CLI::App& bench) {
  auto o = std::make_shared<VideoBenchOptions>();
  auto* sub = bench.add_subcommand(
      "video",
      "The video workload end to end on generated videos: videos/s and frames/s against the "
      "physical limit and an FFmpeg + Tesseract command-line baseline, and peak RSS of a "
      "corpus, of the same corpus 4x longer and of 4x as many videos");
  sub->add_flag("--json", o->json, "Print one JSON object instead of the tables");
  sub->add_flag("--quick", o->quick, "Tiny sizes: proves the benchmark runs, measures nothing");
  sub->add_option("--work-dir", o->work_dir,
                  "Directory for the corpora and outputs, kept (its corpus, out, rss and baseline "
                  "subdirectories are replaced; default: a temporary directory, removed)");
  sub->add_option("--videos", o->videos, "Videos of the throughput corpus")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  sub->add_option("--seed", o->seed, "Corpus seed")->capture_default_str();
  sub->add_option("--frames-per-scene", o->frames_per_scene, "Frames sampled per scene")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  sub->add_option("--rss-videos", o->rss_videos,
                  "Videos of the base RSS corpus (x4 in the larger one)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  sub->add_option("--rss-scene-frames", o->rss_scene_frames,
                  "Frames per scene of the short RSS corpus (the long one: 4x)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  sub->add_option("--rss-every", o->rss_every, "Every Nth frame sampled in the RSS corpora")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  sub->add_option("--ocr-replicas", o->replicas, "OCR actors (0: one per core)")
      ->check(CLI::Range(0, 256))
      ->capture_default_str();
  sub->add_option("--baseline-parallel", o->baseline_parallel,
                  "Videos the command-line baseline processes at once")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  sub->callback([sub, o] {
    if (o->quick) {
      if (sub->get_option("--videos")->count() == 0) o->videos = 2;
      if (sub->get_option("--rss-videos")->count() == 0) o->rss_videos = 1;
      if (sub->get_option("--rss-scene-frames")->count() == 0) o->rss_scene_frames = 4;
      if (sub->get_option("--frames-per-scene")->count() == 0) o->frames_per_scene = 1;
    }
    try {
      run_video_bench(*o);
    } catch (const CLI::RuntimeError&) {
      throw;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rayorch bench video: %s\n", e.what());
      throw CLI::RuntimeError(kAborted);
    }
  });
}

}  // namespace rayorch::cli
