// SummarizeScene and AssembleVideo: the gathers' consumers. See video.h.
#include <stdexcept>

#include "video/analysis.h"
#include "video/video.h"
#include <fmt/format.h>

namespace video {

SummarizeScene::SummarizeScene(int near_duplicate_bits)
    : near_duplicate_bits_(near_duplicate_bits) {
  if (near_duplicate_bits < 0 || near_duplicate_bits > 64) {
    throw std::invalid_argument(
        fmt::format("SummarizeScene: near-duplicate distance must be in [0, 64] bits, got {}",
                    near_duplicate_bits));
  }
}

std::vector<ro::Row<SceneRecord>> SummarizeScene::run(
    ro::Column<ro::Group<std::string>> texts, ro::Column<ro::Group<std::uint64_t>> signatures,
    ro::Column<ro::Group<FrameRef>> frames, ro::Column<Scene> scenes) {
  std::vector<ro::Row<SceneRecord>> out;
  out.reserve(scenes.size());
  for (std::size_t i = 0; i < scenes.size(); ++i) {
    const Scene& scene = scenes[i];
    const std::vector<FrameRef> refs = frames[i].to_vector();
    // The gather is declared, not inferred: a frame of another scene, or frames out of
    // order, would be an engine bug, and such a scene must never be reported.
    std::string problem;
    for (std::size_t k = 0; k < refs.size() && problem.empty(); ++k) {
      if (refs[k].scene != scene.index || refs[k].frame < scene.first_frame ||
          refs[k].frame > scene.last_frame || (k > 0 && refs[k].frame <= refs[k - 1].frame)) {
        problem = fmt::format(
            "scene {} (frames {}..{}) gathered frame {} of scene {} at position {}", scene.index,
            scene.first_frame, scene.last_frame, refs[k].frame, refs[k].scene, k);
      }
    }
    if (refs.empty()) problem = fmt::format("scene {} has no sampled frames", scene.index);
    if (!problem.empty()) {
      out.emplace_back(ro::RecordFailure{problem});
      continue;
    }
    try {
      out.emplace_back(summarize_scene(scene, refs, texts[i].to_vector(), signatures[i].to_vector(),
                                       near_duplicate_bits_));
    } catch (const std::invalid_argument& e) {
      out.emplace_back(ro::RecordFailure{e.what()});
    }
  }
  return out;
}

std::vector<ro::Row<VideoRecord>> AssembleVideo::run(ro::Column<ro::Group<SceneRecord>> scenes,
                                                     ro::Column<VideoInfo> info) {
  std::vector<ro::Row<VideoRecord>> out;
  out.reserve(scenes.size());
  for (std::size_t i = 0; i < scenes.size(); ++i) {
    VideoRecord record;
    record.info = info[i];
    record.scenes = scenes[i].to_vector();
    std::string problem;
    std::uint64_t next_frame = 0;
    for (std::size_t s = 0; s < record.scenes.size() && problem.empty(); ++s) {
      const SceneRecord& scene = record.scenes[s];
      if (scene.index != s || scene.first_frame != next_frame) {
        problem = fmt::format(
            "video {}: scene {} (frames {}..{}) gathered at position {}, expected frames from {}",
            record.info.stem, scene.index, scene.first_frame, scene.last_frame, s, next_frame);
      }
      next_frame = scene.last_frame + 1;
    }
    if (record.scenes.empty()) problem = fmt::format("video {} has no scenes", record.info.stem);
    if (!problem.empty()) {
      out.emplace_back(ro::RecordFailure{problem});
      continue;
    }
    record.frames = next_frame;
    out.emplace_back(std::move(record));
  }
  return out;
}

}  // namespace video
