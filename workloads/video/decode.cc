// DecodeFrame: one frame per Grain, by seeking, with one cached reader per actor. See video.h.
#include <stdexcept>

#include "video/reader.h"
#include "video/video.h"
#include <fmt/format.h>

namespace video {

// The last video this actor read. One entry is enough: frames of a video are queued in
// order, so an actor's consecutive Grains mostly come from the same video, and a bounded
// cache keeps at most one open file and decoder per actor.
struct DecodeFrame::Cache {
  std::unique_ptr<FrameReader> reader;
  av::FrameScaler scaler;
};

DecodeFrame::DecodeFrame(int max_width) : max_width_(max_width), cache_(std::make_unique<Cache>()) {
  if (max_width < 16 || max_width > 8192) {
    throw std::invalid_argument(
        fmt::format("DecodeFrame: frame width must be in [16, 8192], got {}", max_width));
  }
  av::install_log_capture();
}

DecodeFrame::~DecodeFrame() = default;

std::vector<ro::Row<FrameImage>> DecodeFrame::run(ro::Column<std::string> paths,
                                                  ro::Column<FrameRef> refs) {
  std::vector<ro::Row<FrameImage>> out;
  out.reserve(paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const FrameRef& ref = refs[i];
    try {
      if (!cache_->reader || cache_->reader->path() != paths[i]) {
        cache_->reader.reset();  // close the previous file before opening the next
        cache_->reader = std::make_unique<FrameReader>(paths[i]);
      }
      FrameReader& reader = *cache_->reader;
      const AVFrame* frame = reader.frame_at(ref.pts);
      const FrameSize size = scaled_size(frame->width, frame->height, max_width_);
      FrameImage image;
      image.frame = ref.frame;
      image.width = static_cast<std::uint32_t>(size.width);
      image.height = static_cast<std::uint32_t>(size.height);
      image.pixels.resize(static_cast<std::size_t>(size.width) *
                          static_cast<std::size_t>(size.height));
      cache_->scaler.convert(*frame, size.width, size.height, image.pixels.data());
      out.emplace_back(std::move(image));
    } catch (const av::VideoError& e) {
      // The reader's position is unknown after a failure; the next Grain reopens.
      cache_->reader.reset();
      // The scene cannot be complete without this frame: its undispatched siblings need not run.
      out.emplace_back(ro::GroupFailure{fmt::format("frame {}: {}", ref.frame, e.what())});
    }
  }
  return out;
}

}  // namespace video
