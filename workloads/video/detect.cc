// DetectScenes: cuts from consecutive frames, by content (video/cuts.h) or by a fixed threshold
// on the gray difference. See video.h.
#include <cmath>
#include <stdexcept>

#include "video/analysis.h"
#include "video/cuts.h"
#include "video/reader.h"
#include "video/video.h"
#include <fmt/format.h>

namespace video {
namespace {

struct Decoded {
  std::vector<std::int64_t> pts;
  std::vector<std::size_t> cuts;   // first frames of every scene but the first, ascending
  std::vector<double> cut_scores;  // the score of each cut
};

Decoded threshold_cuts(FrameReader& reader, const SceneDetection& detection) {
  const FrameSize size = scaled_size(static_cast<int>(reader.info().width),
                                     static_cast<int>(reader.info().height), detection.width());
  const auto pixels = static_cast<std::size_t>(size.width) * static_cast<std::size_t>(size.height);
  std::vector<std::uint8_t> previous(pixels), current(pixels);
  av::FrameScaler scaler;
  std::vector<double> differences;  // element i: frame i against frame i-1
  Decoded d;
  while (const AVFrame* frame = reader.next()) {
    scaler.convert(*frame, size.width, size.height, current.data());
    differences.push_back(d.pts.empty() ? 0.0 : mean_abs_difference(previous, current));
    d.pts.push_back(reader.timestamp());
    std::swap(previous, current);
  }
  d.cuts = cut_frames(differences, detection.threshold);
  for (std::size_t c : d.cuts) d.cut_scores.push_back(differences[c]);
  return d;
}

Decoded content_cuts(FrameReader& reader, const SceneDetection& detection) {
  const FrameSize size = scaled_size(static_cast<int>(reader.info().width),
                                     static_cast<int>(reader.info().height), detection.width());
  const auto bytes =
      3 * static_cast<std::size_t>(size.width) * static_cast<std::size_t>(size.height);
  av::FrameScaler scaler(AV_PIX_FMT_RGB24);
  CutDetector detector(detection.cut_options(reader.info().fps));
  Decoded d;
  while (const AVFrame* frame = reader.next()) {
    std::vector<std::uint8_t> rgb(bytes);
    scaler.convert(*frame, size.width, size.height, rgb.data());
    detector.push(ContentFrame::from_rgb(size.width, size.height, std::move(rgb)));
    d.pts.push_back(reader.timestamp());
  }
  for (const Cut& c : detector.finish()) {
    d.cuts.push_back(static_cast<std::size_t>(c.frame));
    d.cut_scores.push_back(c.score);
  }
  return d;
}

}  // namespace

int SceneDetection::width() const {
  if (analysis_width > 0) return analysis_width;
  return method == CutMethod::threshold ? 64 : 128;
}

CutOptions SceneDetection::cut_options(double fps) const {
  // Without a known rate, assume 25 frames per second.
  const double rate = fps > 0 ? fps : 25.0;
  CutOptions o;
  o.adaptive_ratio = adaptive_ratio;
  o.min_score = min_score;
  o.min_scene_frames = std::max(1, static_cast<int>(std::lround(min_scene_seconds * rate)));
  o.max_transition_frames =
      std::max(2, static_cast<int>(std::lround(max_transition_seconds * rate)));
  return o;
}

void validate(const SceneDetection& d) {
  if (!(d.threshold > 0 && d.threshold < 255)) {
    throw std::invalid_argument(
        fmt::format("scene threshold must be in (0, 255), got {}", d.threshold));
  }
  if (d.analysis_width != 0 && (d.analysis_width < 8 || d.analysis_width > 1024)) {
    throw std::invalid_argument(
        fmt::format("analysis width must be 0 or in [8, 1024], got {}", d.analysis_width));
  }
  if (!(d.adaptive_ratio > 1 && d.adaptive_ratio <= 100)) {
    throw std::invalid_argument(
        fmt::format("adaptive ratio must be in (1, 100], got {}", d.adaptive_ratio));
  }
  if (!(d.min_score > 0 && d.min_score < 255)) {
    throw std::invalid_argument(
        fmt::format("minimum cut score must be in (0, 255), got {}", d.min_score));
  }
  if (!(d.min_scene_seconds >= 0 && d.min_scene_seconds <= 3600)) {
    throw std::invalid_argument(
        fmt::format("minimum scene length must be in [0, 3600] s, got {}", d.min_scene_seconds));
  }
  if (!(d.max_transition_seconds > 0 && d.max_transition_seconds <= 60)) {
    throw std::invalid_argument(
        fmt::format("longest transition must be in (0, 60] s, got {}", d.max_transition_seconds));
  }
}

DetectScenes::DetectScenes(SceneDetection detection) : detection_(detection) {
  validate(detection_);
  av::install_log_capture();
}

DetectScenes::DetectScenes(double threshold, int analysis_width)
    : DetectScenes(SceneDetection{.method = CutMethod::threshold,
                                  .threshold = threshold,
                                  .analysis_width = analysis_width}) {}

std::vector<ro::Row<std::vector<Scene>>> DetectScenes::run(ro::Column<VideoInfo> videos) {
  std::vector<ro::Row<std::vector<Scene>>> out;
  out.reserve(videos.size());
  for (const VideoInfo& info : videos) {
    try {
      FrameReader reader(info.path);
      const Decoded d = detection_.method == CutMethod::threshold
                            ? threshold_cuts(reader, detection_)
                            : content_cuts(reader, detection_);
      if (d.pts.empty()) {
        out.emplace_back(
            ro::RecordFailure{fmt::format("video {} has no decodable frames", info.path)});
        continue;
      }
      std::vector<std::size_t> starts{0};
      for (std::size_t c : d.cuts) starts.push_back(c);
      std::vector<Scene> scenes;
      for (std::size_t s = 0; s < starts.size(); ++s) {
        const std::size_t first = starts[s];
        const std::size_t end = s + 1 < starts.size() ? starts[s + 1] : d.pts.size();
        Scene scene;
        scene.index = static_cast<std::uint32_t>(s);
        scene.first_frame = first;
        scene.last_frame = end - 1;
        scene.time_base = reader.time_base();
        scene.stream_start = reader.stream_start();
        scene.start_seconds = scene.seconds(d.pts[first]);
        scene.end_seconds = scene.seconds(d.pts[end - 1]) + reader.frame_seconds();
        scene.cut_score = s == 0 ? 0.0 : d.cut_scores[s - 1];
        scene.pts.assign(d.pts.begin() + static_cast<std::ptrdiff_t>(first),
                         d.pts.begin() + static_cast<std::ptrdiff_t>(end));
        scenes.push_back(std::move(scene));
      }
      out.emplace_back(std::move(scenes));
    } catch (const av::VideoError& e) {
      out.emplace_back(ro::RecordFailure{e.what()});
    }
  }
  return out;
}

}  // namespace video
