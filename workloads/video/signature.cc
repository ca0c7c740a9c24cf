// FrameSignature: the difference hash of each frame. See video.h.
#include <stdexcept>

#include "video/analysis.h"
#include "video/video.h"

namespace video {

std::vector<ro::Row<std::uint64_t>> FrameSignature::run(ro::Column<FrameImage> frames) {
  std::vector<ro::Row<std::uint64_t>> out;
  out.reserve(frames.size());
  for (const FrameImage& frame : frames) {
    try {
      out.emplace_back(difference_hash(frame));
    } catch (const std::invalid_argument& e) {
      out.emplace_back(ro::RecordFailure{e.what()});
    }
  }
  return out;
}

}  // namespace video
