// OpenVideo: container metadata. See video.h.
#include "video/reader.h"
#include "video/video.h"

namespace video {

OpenVideo::OpenVideo() {
  av::install_log_capture();
}

std::vector<ro::Row<VideoInfo>> OpenVideo::run(ro::Column<std::string> paths) {
  std::vector<ro::Row<VideoInfo>> out;
  out.reserve(paths.size());
  for (const std::string& path : paths) {
    try {
      // Opening the decoder too proves the stream can be decoded by this FFmpeg build.
      FrameReader reader(path);
      out.emplace_back(reader.info());
    } catch (const av::VideoError& e) {
      out.emplace_back(ro::RecordFailure{e.what()});
    }
  }
  return out;
}

}  // namespace video
