// A generated video corpus with known structure, so anyone can check a run's correctness:
// scenes of distinct colour and pattern, each with its own burned-in caption.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace video {

/// What `make_videos` generates.
struct CorpusOptions {
  int videos = 24;         ///< readable videos (v-000 ...)
  std::uint64_t seed = 1;  ///< same seed, same corpus
  int max_scenes = 8;      ///< cap of the long-tailed scene-count distribution
  int min_scene_frames = 4;
  int max_scene_frames = 12;
  int fps = 5;
  int width = 320;
  int height = 180;
  int gop = 10;  ///< keyframe interval: cuts fall inside groups of pictures, so seeks must be exact
  int corrupt = 1;  ///< corrupt files added next to the videos
};

/// One scene as drawn: its frames (inclusive, zero-based) and its caption.
struct ExpectedScene {
  std::uint64_t first_frame = 0;
  std::uint64_t last_frame = 0;
  std::string text;
};

/// One generated video.
struct ExpectedVideo {
  std::string video;  ///< stem
  std::string file;   ///< file name inside the corpus directory
  int fps = 0;
  int width = 0;
  int height = 0;
  std::uint64_t frames = 0;
  std::vector<ExpectedScene> scenes;
};

/// A corpus as described by DIR/expected.jsonl.
struct VideoCorpus {
  std::string dir;
  std::vector<ExpectedVideo> videos;
  std::vector<std::string> corrupt;  ///< stems of the corrupt files
  std::size_t total_scenes() const;
  std::size_t total_frames() const;
};

/// Scene counts of the videos for these options: most videos have one or two scenes, a few
/// many (P(scenes >= k) = k^-0.9, capped at max_scenes). Deterministic across platforms.
std::vector<int> sample_scene_counts(const CorpusOptions& options);

/// Writes DIR/v-NNN.mp4 for every video (MPEG-4 part 2), the corrupt files and
/// DIR/expected.jsonl (one line per file; corrupt ones carry "corrupt": true). Throws
/// std::invalid_argument for bad options and std::runtime_error on I/O, drawing or encoding
/// failures.
VideoCorpus make_videos(const std::string& dir, const CorpusOptions& options);

/// Reads DIR/expected.jsonl. Throws std::runtime_error when it is missing or malformed.
VideoCorpus load_corpus(const std::string& dir);

}  // namespace video
