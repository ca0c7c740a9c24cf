// DetectScenes: cuts from consecutive-frame differences. See video.h.
#include <stdexcept>

#include "video/analysis.h"
#include "video/reader.h"
#include "video/video.h"
#include <fmt/format.h>

namespace video {
namespace {

struct Decoded {
  std::vector<std::int64_t> pts;
  std::vector<double> differences;  // element i: frame i against frame i-1
};

Decoded read_differences(FrameReader& reader, int analysis_width) {
  const FrameSize size = scaled_size(static_cast<int>(reader.info().width),
                                     static_cast<int>(reader.info().height), analysis_width);
  const auto pixels = static_cast<std::size_t>(size.width) * static_cast<std::size_t>(size.height);
  std::vector<std::uint8_t> previous(pixels), current(pixels);
  av::GrayScaler scaler;
  Decoded d;
  while (const AVFrame* frame = reader.next()) {
    scaler.convert(*frame, size.width, size.height, current.data());
    d.differences.push_back(d.pts.empty() ? 0.0 : mean_abs_difference(previous, current));
    d.pts.push_back(reader.timestamp());
    std::swap(previous, current);
  }
  return d;
}

}  // namespace

DetectScenes::DetectScenes(double threshold, int analysis_width)
    : threshold_(threshold), analysis_width_(analysis_width) {
  if (!(threshold > 0 && threshold < 255)) {
    throw std::invalid_argument(
        fmt::format("DetectScenes: threshold must be in (0, 255), got {}", threshold));
  }
  if (analysis_width < 8 || analysis_width > 1024) {
    throw std::invalid_argument(
        fmt::format("DetectScenes: analysis width must be in [8, 1024], got {}", analysis_width));
  }
  av::install_log_capture();
}

std::vector<ro::Row<std::vector<Scene>>> DetectScenes::run(ro::Column<VideoInfo> videos) {
  std::vector<ro::Row<std::vector<Scene>>> out;
  out.reserve(videos.size());
  for (const VideoInfo& info : videos) {
    try {
      FrameReader reader(info.path);
      const Decoded d = read_differences(reader, analysis_width_);
      if (d.pts.empty()) {
        out.emplace_back(
            ro::RecordFailure{fmt::format("video {} has no decodable frames", info.path)});
        continue;
      }
      std::vector<std::size_t> starts{0};
      for (std::size_t c : cut_frames(d.differences, threshold_)) starts.push_back(c);
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
        scene.cut_score = d.differences[first];
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
