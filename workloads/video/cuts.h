// Cut detection that works across content without tuning: a content score that sees colour,
// brightness and structure, judged against the recent scores instead of a fixed threshold,
// with gradual transitions (dissolves, fades) reported as one cut. Free of FFmpeg and of the
// engine, so it can be tested on synthetic frames. docs/VIDEO.md explains the method.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace video {

/// How cuts are decided.
enum class CutMethod {
  content,    ///< HSV + edge score, adaptive ratio, gradual transitions (the default)
  threshold,  ///< mean gray difference above a fixed threshold (the original detector)
};

/// Parameters of the content detector; the defaults hold across slides, footage and screens.
struct CutOptions {
  /// A hard cut's score is at least this many times the mean score of its neighbours.
  double adaptive_ratio = 3.0;
  /// Nothing scoring below this (0..255) between the frames before and after it is a cut.
  double min_score = 4.0;
  /// Frames on each side of a frame whose scores form its neighbourhood.
  int window = 2;
  /// Scenes shorter than this many frames are merged into the previous one.
  int min_scene_frames = 3;
  /// A run of changing frames longer than this is motion (a pan, a zoom, scrolling), never a
  /// gradual transition.
  int max_transition_frames = 30;
  /// A run of changing frames is a dissolve when every frame inside it is within this
  /// fraction of the change from a blend of the frames around it.
  double blend_tolerance = 0.3;
};

/// A small frame as the content score sees it: hue, saturation, value and a dilated edge map
/// of the value plane, one byte per pixel each, plus the packed RGB it came from.
struct ContentFrame {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;  ///< 3 bytes per pixel, rows packed
  std::vector<std::uint8_t> hue, saturation, value, edges;
  double value_mean = 0;       ///< mean of the value plane
  double value_deviation = 0;  ///< standard deviation of the value plane

  /// Builds the planes from packed RGB24 rows.
  static ContentFrame from_rgb(int width, int height, std::vector<std::uint8_t> rgb);
  /// Near-uniform and near black or white: a frame between a fade out and a fade in (a dark
  /// picture is not one).
  bool uniform() const { return value_deviation < 3.0 && (value_mean < 24 || value_mean > 232); }
};

/// Content distance of two equally sized frames, 0..255: the mean of the saturation-weighted
/// hue difference, the saturation, value and edge-map differences.
double content_score(const ContentFrame& a, const ContentFrame& b);

/// The value-plane distance of two frames after the best shift of up to `reach` pixels in
/// each direction, 0..255: low for a pan, a scroll or a shake, as high as the plain
/// difference for a cut. Sampled on every other pixel.
double shifted_value_distance(const ContentFrame& a, const ContentFrame& b, int reach);

/// How far `middle` is from the closest blend (1 - t) a + t b of two frames, as a fraction of
/// the difference between them; `t` receives that blend factor. 0 for an exact blend.
double blend_residual(const ContentFrame& a, const ContentFrame& b, const ContentFrame& middle,
                      double& t);

/// A detected cut: the first frame of a new scene and its score.
struct Cut {
  std::uint64_t frame = 0;
  double score = 0;
};

/// Finds cuts in frames pushed in presentation order. Holds at most the frames of one
/// transition plus its look-ahead, so memory does not grow with the video; the score of every
/// frame (16 bytes each) is kept for the neighbourhood. Not thread-safe.
class CutDetector {
 public:
  explicit CutDetector(CutOptions options);
  void push(ContentFrame frame);
  /// Decides the frames still pending and returns every cut, ascending.
  std::vector<Cut> finish();
  /// Score of frame i against frame i - 1 (element 0 is 0).
  std::span<const double> scores() const { return scores_; }

 private:
  struct Held {
    std::uint64_t index;
    ContentFrame frame;
  };
  void decide(std::uint64_t j);
  bool spike(std::uint64_t j) const;
  double quiet(std::uint64_t j) const;
  const ContentFrame& held(std::uint64_t index) const;
  void close_run(std::uint64_t stable);
  void emit(Cut cut, std::uint64_t from, std::uint64_t to);

  CutOptions options_;
  std::vector<double> scores_;
  std::vector<double> shifted_;      // shifted_value_distance of each frame to the previous one
  std::deque<Held> frames_;          // the newest frames, enough for a run and the look-ahead
  std::uint64_t decided_ = 1;        // next frame to decide
  std::deque<double> quiet_scores_;  // of the latest unchanging frames
  double run_threshold_ = 0;         // the score that keeps a run going
  bool in_run_ = false;
  bool run_is_motion_ = false;
  std::uint64_t run_start_ = 0;
  // A cut whose new scene began on a uniform frame (a fade to black): it becomes the next
  // cut's if nothing but uniform frames lies between them, so a fade out and in is one cut.
  bool pending_fade_ = false;
  std::uint64_t last_transition_end_ = 0;  // the first frame after the last cut's change
  std::vector<Cut> cuts_;
};

/// Drops cuts closer than `min_scene_frames` to the previous kept cut (or to the start).
std::vector<Cut> enforce_min_scene(std::vector<Cut> cuts, int min_scene_frames);

}  // namespace video
