// SampleFrames: the frames of a scene to analyse. See video.h.
#include "video/analysis.h"
#include "video/video.h"

namespace video {

SampleFrames::SampleFrames(SamplingConfig config) : config_(config) {
  (void)sample_offsets(1, config_);  // rejects an invalid configuration on the actor
}

std::vector<std::vector<FrameRef>> SampleFrames::run(ro::Column<Scene> scenes) {
  std::vector<std::vector<FrameRef>> out;
  out.reserve(scenes.size());
  for (const Scene& scene : scenes) {
    std::vector<FrameRef> refs;
    for (std::uint64_t offset : sample_offsets(scene.pts.size(), config_)) {
      FrameRef ref;
      ref.scene = scene.index;
      ref.frame = scene.first_frame + offset;
      ref.pts = scene.pts[offset];
      ref.seconds = scene.seconds(ref.pts);
      refs.push_back(ref);
    }
    out.push_back(std::move(refs));
  }
  return out;
}

}  // namespace video
