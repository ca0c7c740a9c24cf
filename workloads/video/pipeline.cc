// The video pipeline and its configuration. See video.h.
#include <stdexcept>

#include "video/analysis.h"
#include "video/video.h"
#include <fmt/format.h>

namespace video {
namespace {

template <class U>
ro::Module<U> staged(ro::Module<U> m, const StageConfig& stage) {
  // A UDF that throws is a bug or an environment failure, not bad data (data problems are
  // RecordFailures); isolating it keeps one poisoned Grain from failing its neighbours.
  return std::move(m)
      .replicas(stage.replicas)
      .batch_size(stage.batch_size)
      .recovery(ro::RecoveryPolicy::isolate_tail());
}

}  // namespace

void validate(const PipelineConfig& c) {
  validate(c.detection);
  (void)sample_offsets(1, c.sampling);
  if (c.frame_width < 16 || c.frame_width > 8192) {
    throw std::invalid_argument(
        fmt::format("frame width must be in [16, 8192], got {}", c.frame_width));
  }
  if (c.near_duplicate_bits < 0 || c.near_duplicate_bits > 64) {
    throw std::invalid_argument(fmt::format(
        "near-duplicate distance must be in [0, 64] bits, got {}", c.near_duplicate_bits));
  }
  if (c.lang.empty()) throw std::invalid_argument("OCR language must not be empty");
}

VideoPipeline::VideoPipeline(const PipelineConfig& c)
    : open(staged(ro::Module<OpenVideo>(), c.open)),
      detect(staged(ro::Module<DetectScenes>(c.detection), c.detect)),
      sample(staged(ro::Module<SampleFrames>(c.sampling), c.sample)),
      decode(staged(ro::Module<DecodeFrame>(c.frame_width), c.decode)),
      ocr(staged(ro::Module<OcrFrame>(c.lang, c.tessdata), c.ocr)),
      signature(staged(ro::Module<FrameSignature>(), c.signature)),
      summarize(staged(ro::Module<SummarizeScene>(c.near_duplicate_bits), c.scene)),
      assemble(staged(ro::Module<AssembleVideo>(), c.assemble)) {}

ro::Port<VideoRecord> VideoPipeline::forward(ro::Port<std::string> path) {
  ro::Port<VideoInfo> info = open(path);
  ro::Port<Scene> scenes = ro::F::expand(detect(info));
  ro::Port<FrameRef> frames = ro::F::expand(sample(scenes));
  ro::Port<FrameImage> images = decode(ro::F::broadcast(path, frames), frames);
  auto [texts, signatures, refs] = ro::F::reduce_aligned(ocr(images), signature(images), frames);
  ro::Port<SceneRecord> records = summarize(texts, signatures, refs, scenes);
  return assemble(ro::F::reduce(records), info);
}

ro::Compiled<VideoPipeline> compile_pipeline(const PipelineConfig& config, bool optimize) {
  validate(config);
  VideoPipeline pipeline(config);
  return ro::compile(pipeline, {.optimize = optimize});
}

}  // namespace video
