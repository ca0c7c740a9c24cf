// Helpers shared by the video workload tests (analysis_test, reader_test, pipeline_test,
// convert_test): their scratch directory and a corpus small enough for two cores.
#pragma once

#include <cstdint>

#include "support/workload_testing.h"
#include "video/samples.h"

namespace video_testing {

// A scratch directory named after this test.
class TempDir : public workload_testing::TempDir {
 public:
  TempDir() : workload_testing::TempDir("video-test") {}
};

// A corpus small enough for two cores: short scenes, two frames sampled per scene.
inline video::CorpusOptions small_corpus(int videos, std::uint64_t seed) {
  video::CorpusOptions o;
  o.videos = videos;
  o.seed = seed;
  o.max_scenes = 5;
  o.min_scene_frames = 3;
  o.max_scene_frames = 7;
  o.gop = 4;  // keyframes every 4 frames: most cuts and sampled frames fall between them
  return o;
}

}  // namespace video_testing
