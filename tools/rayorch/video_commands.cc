// `rayorch video2jsonl`, `rayorch make-videos` and `rayorch check-videos`: the video workload
// on the command line.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "video/check.h"
#include "video/convert.h"
#include "video/footage.h"
#include "video/footage_check.h"
#include "video/samples.h"
#include "workload_commands.h"
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace rayorch::cli {
namespace {

constexpr const char* kExitCodes =
    "Exit status: 0 every video has a record; 1 the run finished but some videos failed "
    "(listed in OUTDIR/failures.jsonl); 2 bad command line or options, missing or unreadable "
    "input, duplicate video names, unwritable output, or an OCR language that cannot be loaded "
    "(nothing is processed); 3 the run stopped on an unrecoverable error (the records of the "
    "parts OUTDIR/_manifest.json lists are complete; rerun with --resume to process the rest).";

struct VideoArgs {
  video::ConvertOptions convert;
  bool quiet = false;
  bool no_progress = false;
};

void run_video2jsonl(VideoArgs& args) {
  args.convert.progress = !args.no_progress;
  run_conversion(
      "video2jsonl", [&] { return video::convert(args.convert); }, video::format_summary,
      args.quiet,
      fmt::format("records committed before the error are complete in the parts {}/"
                  "_manifest.json lists\n",
                  args.convert.out_dir));
}

void add_video2jsonl(CLI::App& app) {
  auto args = std::make_shared<VideoArgs>();
  // One single-threaded OCR engine per core saturates the machine; decoding a seeked frame
  // costs a fraction of recognising it.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  args->convert.pipeline.ocr.replicas = cores;
  args->convert.pipeline.decode.replicas = std::max(1, cores / 4);
  CLI::App* cmd = app.add_subcommand(
      "video2jsonl",
      "Turn videos into one JSON record each: find scene cuts, sample frames per scene, decode, "
      "OCR and hash them across videos, write each video's record as one line of a part "
      "OUTDIR/videos-NNNNN.jsonl, committed with the run journal (listed in "
      "OUTDIR/_manifest.json) within 10 s of its own frames being done");
  cmd->footer(kExitCodes);
  video::ConvertOptions& c = args->convert;
  video::PipelineConfig& p = c.pipeline;
  add_input_options(cmd, c.inputs,
                    "video files, folders (searched recursively for .mp4 .mkv .avi .mov .webm "
                    "...), glob patterns; video names (file stems) must be unique");
  cmd->add_option("-o,--output", c.out_dir, "output directory (created if missing)")->required();
  video::SceneDetection& d = p.detection;
  cmd->add_option("--cut-method", d.method,
                  "how cuts are found: 'content' scores hue, saturation, brightness and edges "
                  "of consecutive frames and cuts where a score stands out against its "
                  "neighbours (dissolves and fades are one cut each); 'threshold' cuts where "
                  "the mean gray difference exceeds --scene-threshold (docs/VIDEO.md)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, video::CutMethod>{{"content", video::CutMethod::content},
                                                  {"threshold", video::CutMethod::threshold}},
          CLI::ignore_case))
      ->default_str("content");
  cmd->add_option("--scene-threshold", d.threshold,
                  "threshold method: mean absolute gray difference (0-255) between consecutive "
                  "frames that cuts")
      ->check(CLI::Range(0.001, 254.999))
      ->capture_default_str();
  cmd->add_option("--analysis-width", d.analysis_width,
                  "width of the frames compared for cuts (0: 128 for content, 64 for threshold)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  cmd->add_option("--cut-ratio", d.adaptive_ratio,
                  "content method: a hard cut's score is at least this many times the mean "
                  "score of the two frames on each side")
      ->check(CLI::Range(1.001, 100.0))
      ->capture_default_str();
  cmd->add_option("--min-cut-score", d.min_score,
                  "content method: least content score (0-255) of a cut, between the frames "
                  "before and after a gradual transition")
      ->check(CLI::Range(0.001, 254.999))
      ->capture_default_str();
  cmd->add_option("--min-scene-seconds", d.min_scene_seconds,
                  "content method: a cut closer than this to the previous one is dropped")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--max-transition-seconds", d.max_transition_seconds,
                  "content method: a change lasting longer than this is motion (pan, zoom, "
                  "scrolling), never a fade or dissolve")
      ->check(CLI::Range(0.001, 60.0))
      ->capture_default_str();
  auto* per_scene = cmd->add_option("--frames-per-scene", p.sampling.per_scene,
                                    "frames sampled per scene, spread from its first to its last")
                        ->check(CLI::Range(1, 100000))
                        ->capture_default_str();
  auto* every =
      cmd->add_option("--every", p.sampling.every, "sample every Nth frame of each scene instead")
          ->check(CLI::Range(1, 100000));
  every->excludes(per_scene);
  cmd->add_option("--frame-width", p.frame_width,
                  "frames for OCR and signatures are decoded at their native size, downscaled "
                  "only when wider than this (document text needs its pixels)")
      ->check(CLI::Range(16, 8192))
      ->capture_default_str();
  cmd->add_option("--near-duplicate-bits", p.near_duplicate_bits,
                  "frames whose signatures differ in at most this many bits are near-duplicates")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  add_stage_options(cmd, "open", "container opening (metadata)", p.open);
  add_stage_options(cmd, "detect", "scene detection (decodes every frame small)", p.detect);
  add_stage_options(cmd, "sample", "frame sampling", p.sample);
  add_stage_options(cmd, "decode", "frame decoding (seek per frame, one cached decoder per actor)",
                    p.decode);
  add_stage_options(cmd, "ocr", "OCR engine", p.ocr);
  add_stage_options(cmd, "signature", "frame signature", p.signature);
  add_stage_options(cmd, "scene", "scene record", p.scene);
  add_stage_options(cmd, "assemble", "video record", p.assemble);
  cmd->add_option("--lang", p.lang, "Tesseract language")->capture_default_str();
  cmd->add_option("--tessdata", p.tessdata, "Tesseract data directory (default: Tesseract's own)");
  cmd->add_option("--input-batch-size", c.input_batch_size,
                  "videos per input batch (0: all in one). With --max-active it bounds how many "
                  "videos' frames are in flight")
      ->capture_default_str();
  cmd->add_option("--max-active", c.max_active_input_batches, "input batches in flight at once")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1024}))
      ->capture_default_str();
  cmd->add_flag("--resume", c.resume,
                "continue an interrupted run: videos recorded finished in the run journal "
                "OUTDIR/.video2jsonl-journal are not processed again, their records are "
                "written again from it (every run keeps one unless --no-journal; without "
                "--resume it starts over)");
  cmd->add_flag_callback(
         "--no-journal", [&c] { c.journal = false; },
         "keep no run journal (OUTDIR/.video2jsonl-journal): a later --resume cannot skip the "
         "videos "
         "this run finishes")
      ->excludes("--resume");
  add_run_output_options(cmd, c, args->no_progress, args->quiet);
  cmd->callback([args, every] {
    if (every->count() > 0) args->convert.pipeline.sampling.per_scene = 0;
    run_video2jsonl(*args);
  });
}

void add_make_videos(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto o = std::make_shared<video::CorpusOptions>();
  CLI::App* cmd = app.add_subcommand(
      "make-videos",
      "Generate MPEG-4 videos of known structure (long-tailed scene counts, a caption per "
      "scene) plus corrupt files, with OUTDIR/expected.jsonl to check runs against");
  cmd->add_option("outdir", *dir, "directory to write the corpus into")->required();
  cmd->add_option("--videos", o->videos, "readable videos")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed")->capture_default_str();
  cmd->add_option("--max-scenes", o->max_scenes, "most scenes in one video")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--min-scene-frames", o->min_scene_frames, "shortest scene")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--max-scene-frames", o->max_scene_frames, "longest scene")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--fps", o->fps, "frame rate")->check(CLI::Range(1, 240))->capture_default_str();
  cmd->add_option("--width", o->width, "frame width (even)")
      ->check(CLI::Range(16, 4096))
      ->capture_default_str();
  cmd->add_option("--height", o->height, "frame height (even)")
      ->check(CLI::Range(16, 4096))
      ->capture_default_str();
  cmd->add_option("--gop", o->gop, "frames per keyframe interval")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_option("--corrupt", o->corrupt, "corrupt files")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->callback([dir, o] {
    const video::VideoCorpus corpus =
        run_or_usage("make-videos", [&] { return video::make_videos(*dir, *o); });
    std::size_t most = 0;
    for (const auto& v : corpus.videos) most = std::max(most, v.scenes.size());
    std::fputs(fmt::format("make-videos: {} videos, {} scenes (most {}), {} frames, {} corrupt "
                           "in {}\n",
                           corpus.videos.size(), corpus.total_scenes(), most, corpus.total_frames(),
                           corpus.corrupt.size(), *dir)
                   .c_str(),
               stdout);
  });
}

void add_check_videos(CLI::App& app) {
  auto expected = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto min_scene_match = std::make_shared<double>(1.0);
  auto min_accuracy = std::make_shared<double>(0.9);
  CLI::App* cmd = app.add_subcommand(
      "check-videos",
      "Score a video2jsonl output directory against the known structure of a make-videos corpus");
  cmd->footer(
      "Exit status: 0 the scene-count match rate and the caption word accuracy reach their "
      "minimums and exactly the corrupt files are listed as failed; 1 otherwise; 2 bad command "
      "line or unreadable corpus or output.");
  cmd->add_option("expected", *expected, "the make-videos directory (with expected.jsonl)")
      ->required();
  cmd->add_option("outdir", *out, "the video2jsonl output directory")->required();
  cmd->add_option("--min-scene-match", *min_scene_match,
                  "required share of videos with exactly the expected scene count")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--min-accuracy", *min_accuracy, "required caption word accuracy overall")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->callback([expected, out, min_scene_match, min_accuracy] {
    video::VideoCorpus corpus;
    video::CorpusCheck check;
    run_or_usage("check-videos", [&] {
      corpus = video::load_corpus(*expected);
      check = video::check_outputs(corpus, *out);
    });
    for (const video::VideoCheck& v : check.videos) {
      if (v.present && v.scene_count_ok && v.ranges_ok && v.accuracy >= *min_accuracy) continue;
      std::string what;
      if (!v.present) {
        what = "missing";
      } else if (!v.scene_count_ok) {
        what = fmt::format("{} scenes, expected {}", v.actual_scenes, v.expected_scenes);
      } else if (!v.ranges_ok) {
        what = "scene frame ranges differ";
      } else {
        what = fmt::format("caption word accuracy {:.1f}%", 100 * v.accuracy);
      }
      std::fputs(fmt::format("  {}: {}\n", v.video, what).c_str(), stdout);
    }
    std::vector<std::string> corrupt = corpus.corrupt;
    std::sort(corrupt.begin(), corrupt.end());
    const bool failures_ok = check.failed_listed == corrupt;
    if (!failures_ok) {
      std::fputs(fmt::format("  failures.jsonl lists [{}], expected [{}]\n",
                             fmt::join(check.failed_listed, ", "), fmt::join(corrupt, ", "))
                     .c_str(),
                 stdout);
    }
    if (!check.unexpected.empty()) {
      std::fputs(fmt::format("  records of videos not in the corpus: {}\n",
                             fmt::join(check.unexpected, ", "))
                     .c_str(),
                 stdout);
    }
    const bool ok = check.scene_count_match_rate >= *min_scene_match &&
                    check.accuracy >= *min_accuracy && failures_ok;
    std::fputs(
        fmt::format("check-videos: {} videos, {} scenes: scene counts exact {:.1f}%, frame "
                    "ranges exact {:.1f}%, caption word accuracy {:.2f}%, failures listed "
                    "{}: {}\n",
                    check.videos.size(), corpus.total_scenes(), 100 * check.scene_count_match_rate,
                    100 * check.range_match_rate, 100 * check.accuracy,
                    failures_ok ? "as expected" : "WRONG", ok ? "OK" : "FAILED")
            .c_str(),
        stdout);
    if (!ok) throw CLI::RuntimeError(kSomeFailed);
  });
}

void add_make_footage(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto o = std::make_shared<video::FootageOptions>();
  CLI::App* cmd = app.add_subcommand(
      "make-footage",
      "Write a corpus of videos made from real material with known cuts: slideshows of PDF "
      "pages (hard cuts, dissolves, fades through black, camera noise), pans and zooms over "
      "pictures and a scrolling screen; DIR/footage.jsonl describes it");
  cmd->add_option("outdir", *dir, "directory to write the corpus into")->required();
  cmd->add_option("--width", o->width, "frame width (even)")
      ->check(CLI::Range(64, 4096))
      ->capture_default_str();
  cmd->add_option("--height", o->height, "frame height (even)")
      ->check(CLI::Range(64, 4096))
      ->capture_default_str();
  cmd->add_option("--fps", o->fps, "frame rate")->check(CLI::Range(1, 240))->capture_default_str();
  cmd->add_option("--slides", o->slides, "slides per slideshow")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  cmd->add_option("--slide-frames", o->slide_frames, "frames a slide stays still")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  cmd->add_option("--transition-frames", o->transition_frames,
                  "frames of a dissolve, or of each half of a fade")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--motion-frames", o->motion_frames, "frames of a pan, zoom or scroll")
      ->check(CLI::Range(2, 100000))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed (camera noise)")->capture_default_str();
  cmd->add_option("--document", o->documents, "PDF files to take pages from (repeatable)");
  cmd->add_option("--picture", o->pictures, "PNG pictures to pan and zoom over (repeatable)");
  cmd->callback([dir, o] {
    const video::FootageCorpus corpus =
        run_or_usage("make-footage", [&] { return video::make_footage(*dir, *o); });
    std::size_t cuts = 0, frames = 0;
    for (const auto& v : corpus.videos) {
      cuts += v.cuts.size();
      frames += v.frames;
    }
    std::fputs(fmt::format("make-footage: {} videos, {} cuts, {} frames in {}\n",
                           corpus.videos.size(), cuts, frames, *dir)
                   .c_str(),
               stdout);
  });
}

void add_check_footage(CLI::App& app) {
  auto expected = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto min_precision = std::make_shared<double>(0.95);
  auto min_recall = std::make_shared<double>(0.95);
  auto min_text_recall = std::make_shared<double>(0.8);
  CLI::App* cmd = app.add_subcommand(
      "check-footage",
      "Score a video2jsonl output directory against a make-footage corpus: cut precision and "
      "recall (a dissolve or fade counts once), cuts inside pans, zooms and scrolls, and "
      "recall of the documents' words on slide frames");
  cmd->footer(
      "Exit status: 0 every score reaches its minimum and no cut lies inside motion; 1 "
      "otherwise; 2 bad command line or unreadable corpus or output.");
  cmd->add_option("expected", *expected, "the make-footage directory (with footage.jsonl)")
      ->required();
  cmd->add_option("outdir", *out, "the video2jsonl output directory")->required();
  cmd->add_option("--min-precision", *min_precision, "required cut precision")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--min-recall", *min_recall, "required cut recall")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--min-text-recall", *min_text_recall,
                  "required share of document words read on slide frames")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->callback([expected, out, min_precision, min_recall, min_text_recall] {
    video::FootageCheck check;
    run_or_usage("check-footage",
                 [&] { check = video::check_footage(video::load_footage(*expected), *out); });
    for (const video::FootageVideoCheck& v : check.videos) {
      std::fputs(fmt::format("  {}: {}cuts {} found of {}, {} detected, {} inside motion; "
                             "words {} of {} on {} slide frames\n",
                             v.video, v.present ? "" : "MISSING ", v.matched_cuts, v.expected_cuts,
                             v.detected_cuts, v.cuts_in_motion, v.words_found, v.slide_words,
                             v.scored_frames)
                     .c_str(),
                 stdout);
    }
    const bool ok = check.precision >= *min_precision && check.recall >= *min_recall &&
                    check.text_recall >= *min_text_recall && check.cuts_in_motion == 0;
    std::fputs(fmt::format("check-footage: {} videos: cut precision {:.3f}, recall {:.3f}, {} "
                           "cuts inside motion, text recall {:.3f}: {}\n",
                           check.videos.size(), check.precision, check.recall, check.cuts_in_motion,
                           check.text_recall, ok ? "OK" : "FAILED")
                   .c_str(),
               stdout);
    if (!ok) throw CLI::RuntimeError(kSomeFailed);
  });
}

}  // namespace

void add_video_commands(CLI::App& app) {
  add_video2jsonl(app);
  add_make_videos(app);
  add_check_videos(app);
  add_make_footage(app);
  add_check_footage(app);
}

}  // namespace rayorch::cli
