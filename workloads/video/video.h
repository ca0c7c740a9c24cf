// The video workload: a video becomes an ordered, input-dependent list of scenes (cuts found
// in its decoded frames), each scene a list of sampled frames; frames of many videos are
// decoded, OCR'd and hashed together, gathered back into their scene in frame order, and the
// scenes into their video in scene order, giving one record per video.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "video/cuts.h"

#include <rayorch/rayorch.h>

namespace video {

namespace ro = rayorch;

/// What a video is, read from its container without decoding.
struct VideoInfo {
  std::string path;
  std::string stem;             ///< file name without extension: the record's name
  std::string codec;            ///< e.g. "mpeg4"
  double duration_seconds = 0;  ///< container duration (0 when unknown)
  double fps = 0;               ///< average frame rate (0 when unknown)
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::int64_t frames_declared = 0;  ///< frame count stored in the container (0 when unknown)
};

/// One shot between two cuts. Frame numbers count decoded frames in presentation order from
/// the start of the video, zero-based; ranges are inclusive.
struct Scene {
  std::uint32_t index = 0;
  std::uint64_t first_frame = 0;
  std::uint64_t last_frame = 0;
  double start_seconds = 0;
  double end_seconds = 0;         ///< end of the last frame's display time
  double cut_score = 0;           ///< frame difference that opened the scene (0 for the first)
  std::vector<std::int64_t> pts;  ///< stream timestamps of the scene's frames, for seeking
  double time_base = 0;           ///< seconds per timestamp unit
  std::int64_t stream_start = 0;  ///< the timestamp of time 0

  /// A timestamp of the stream in seconds.
  double seconds(std::int64_t t) const { return static_cast<double>(t - stream_start) * time_base; }
};

/// A frame chosen to represent part of a scene: where to find it.
struct FrameRef {
  std::uint32_t scene = 0;
  std::uint64_t frame = 0;
  std::int64_t pts = 0;  ///< stream timestamp used to seek to it
  double seconds = 0;
};

/// A decoded frame, downscaled and gray: 8 bits per pixel, rows packed without padding.
struct FrameImage {
  std::uint64_t frame = 0;
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::vector<std::uint8_t> pixels;
};

/// One sampled frame inside a scene record.
struct SceneFrame {
  std::uint64_t frame = 0;
  double seconds = 0;
  std::string text;             ///< recognised text, whitespace collapsed
  std::uint64_t signature = 0;  ///< 64-bit difference hash
  /// Within the near-duplicate distance of an earlier, unflagged frame of the scene.
  bool near_duplicate = false;
  std::int64_t duplicate_of = -1;  ///< that earlier frame's number, -1 when not a duplicate
};

/// Everything known about one scene.
struct SceneRecord {
  std::uint32_t index = 0;
  std::uint64_t first_frame = 0;
  std::uint64_t last_frame = 0;
  double start_seconds = 0;
  double end_seconds = 0;
  double cut_score = 0;
  std::string text;             ///< the most frequent non-empty frame text (earliest on ties)
  std::uint64_t signature = 0;  ///< the medoid of the frame signatures under Hamming distance
  std::size_t near_duplicates = 0;
  std::vector<SceneFrame> frames;  ///< in frame order
};

/// One finished video.
struct VideoRecord {
  VideoInfo info;
  std::uint64_t frames = 0;  ///< frames decoded while finding the scenes
  std::vector<SceneRecord> scenes;
};

// The JSON line of a record (video/record_json.h), also its form in the run journal.
std::string to_json_line(const VideoRecord& record);
VideoRecord parse_json_line(std::string_view line);

}  // namespace video

/// The run journal records finished videos as their JSON line (convert.h: --resume).
template <>
struct rayorch::Codec<video::VideoRecord> {
  template <ByteSink S>
  static void encode(const video::VideoRecord& r, S& out) {
    Codec<std::string>::encode(video::to_json_line(r), out);
  }
  static video::VideoRecord decode(std::string_view& in) {
    const std::string line = Codec<std::string>::decode(in);
    try {
      return video::parse_json_line(line);
    } catch (const std::exception& e) {
      throw DecodeError(e.what());
    }
  }
};

namespace video {

/// How frames are chosen inside each scene: exactly one of the two is positive.
struct SamplingConfig {
  int every = 0;      ///< every Nth frame from the scene's first
  int per_scene = 3;  ///< K frames spread evenly from the scene's first to its last frame
};

/// Reads container metadata. An unreadable, corrupt or video-less file is a RecordFailure of
/// that video with FFmpeg's reason, never an exception.
class OpenVideo {
 public:
  OpenVideo();
  std::vector<ro::Row<VideoInfo>> run(ro::Column<std::string> paths);
};

/// How DetectScenes finds cuts (docs/VIDEO.md, "Finding cuts").
struct SceneDetection {
  CutMethod method = CutMethod::content;
  double threshold = 25.0;      ///< threshold method: mean gray difference (0..255) that cuts
  int analysis_width = 0;       ///< width of the compared frames; 0: 64 (threshold), 128 (content)
  double adaptive_ratio = 3.0;  ///< content: a cut's score over its neighbours' mean
  double min_score = 4.0;       ///< content: least score (0..255) of a cut
  double min_scene_seconds = 0.4;       ///< content: shorter scenes join the previous one
  double max_transition_seconds = 3.0;  ///< content: longer changes are motion, not fades

  /// The analysis width in effect.
  int width() const;
  /// The content detector's options for a video of `fps` frames per second.
  CutOptions cut_options(double fps) const;
};

/// Throws std::invalid_argument naming the option when a value is out of range.
void validate(const SceneDetection& detection);

/// Decodes every frame of a video at a small size and cuts it into scenes: by default with
/// the content detector (video/cuts.h), or where the mean absolute gray difference of
/// consecutive frames (0..255) exceeds a fixed threshold.
class DetectScenes {
 public:
  explicit DetectScenes(SceneDetection detection);
  /// The threshold method.
  DetectScenes(double threshold, int analysis_width);
  std::vector<ro::Row<std::vector<Scene>>> run(ro::Column<VideoInfo> videos);

 private:
  SceneDetection detection_;
};

/// Chooses the frames of each scene to analyse.
class SampleFrames {
 public:
  explicit SampleFrames(SamplingConfig config);
  std::vector<std::vector<FrameRef>> run(ro::Column<Scene> scenes);

 private:
  SamplingConfig config_;
};

/// Decodes one frame by seeking (to the keyframe before it, then decoding forward). Each
/// actor keeps the decoder of the last video it read, so consecutive frames of one video
/// neither reopen it nor seek when decoding forward is shorter.
class DecodeFrame {
 public:
  explicit DecodeFrame(int max_width);
  ~DecodeFrame();
  DecodeFrame(const DecodeFrame&) = delete;
  DecodeFrame& operator=(const DecodeFrame&) = delete;

  std::vector<ro::Row<FrameImage>> run(ro::Column<std::string> paths, ro::Column<FrameRef> refs);

 private:
  struct Cache;
  int max_width_;
  std::unique_ptr<Cache> cache_;
};

/// Recognises burned-in text. Each actor owns one single-threaded Tesseract engine, because
/// the pool's replicas are the parallelism.
class OcrFrame {
 public:
  /// `tessdata` empty means Tesseract's built-in data directory.
  OcrFrame(std::string lang, std::string tessdata);
  ~OcrFrame();
  OcrFrame(const OcrFrame&) = delete;
  OcrFrame& operator=(const OcrFrame&) = delete;

  std::vector<ro::Row<std::string>> run(ro::Column<FrameImage> frames);

 private:
  struct Engine;
  std::unique_ptr<Engine> engine_;
};

/// The 64-bit difference hash of each frame.
class FrameSignature {
 public:
  std::vector<ro::Row<std::uint64_t>> run(ro::Column<FrameImage> frames);
};

/// Builds a scene record from its frames' results, gathered in frame order.
class SummarizeScene {
 public:
  explicit SummarizeScene(int near_duplicate_bits);
  std::vector<ro::Row<SceneRecord>> run(ro::Column<ro::Group<std::string>> texts,
                                        ro::Column<ro::Group<std::uint64_t>> signatures,
                                        ro::Column<ro::Group<FrameRef>> frames,
                                        ro::Column<Scene> scenes);

 private:
  int near_duplicate_bits_;
};

/// Builds a video record from its scene records, gathered in scene order.
class AssembleVideo {
 public:
  std::vector<ro::Row<VideoRecord>> run(ro::Column<ro::Group<SceneRecord>> scenes,
                                        ro::Column<VideoInfo> info);
};

/// Pool size and RPC size of one stage.
struct StageConfig {
  int replicas = 1;
  int batch_size = 1;
};

/// Everything that shapes the compiled pipeline.
struct PipelineConfig {
  SceneDetection detection;
  SamplingConfig sampling;
  /// Frames for OCR and signatures are decoded at their native size, downscaled only when
  /// wider than this: document text needs its pixels; the cap bounds memory per frame.
  int frame_width = 1920;
  int near_duplicate_bits = 6;
  std::string lang = "eng";
  std::string tessdata;  ///< empty: Tesseract's default data directory
  StageConfig open{1, 8};
  StageConfig detect{1, 1};
  StageConfig sample{1, 16};
  // Frames of one video arrive in order; several per call let one actor's cached decoder
  // read them forward without seeking.
  StageConfig decode{1, 4};
  // Single-threaded engines: one per core saturates the machine; larger calls only delay
  // the first finished video.
  StageConfig ocr{2, 1};
  StageConfig signature{1, 16};
  StageConfig scene{1, 16};
  StageConfig assemble{1, 8};
};

/// Throws std::invalid_argument naming the option when a value is out of range.
void validate(const PipelineConfig& config);

/// Video path -> record: expand into scenes, expand scenes into frames, per-frame decode,
/// OCR and signature across videos, reduce frames per scene and scenes per video.
struct VideoPipeline : ro::Pipeline {
  explicit VideoPipeline(const PipelineConfig& config = {});

  ro::Module<OpenVideo> open;
  ro::Module<DetectScenes> detect;
  ro::Module<SampleFrames> sample;
  ro::Module<DecodeFrame> decode;
  ro::Module<OcrFrame> ocr;
  ro::Module<FrameSignature> signature;
  ro::Module<SummarizeScene> summarize;
  ro::Module<AssembleVideo> assemble;

  ro::Port<VideoRecord> forward(ro::Port<std::string> path);
};

/// Validates the configuration and compiles the pipeline; cheap, because decoders and OCR
/// engines load only in actor constructors.
ro::Compiled<VideoPipeline> compile_pipeline(const PipelineConfig& config = {},
                                             bool optimize = true);

}  // namespace video
