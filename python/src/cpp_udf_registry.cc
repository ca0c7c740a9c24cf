// The registry of the C++ UDFs usable in Python pipelines: the stages of cpp_udfs.h (the
// simulated document stages of the benchmark's workload among them) and, when the extension
// is built with them, the pdf2md and video stages.
#include <map>
#include <string>
#include <vector>

#include "cpp_udf.h"
#include "cpp_udfs.h"

#if RAYORCH_PYTHON_PDF2MD
#include "pdf2md/pdf2md.h"
#endif

#if RAYORCH_PYTHON_VIDEO
#include "video/video.h"
#endif

namespace rayorch::python {

namespace {

#if RAYORCH_PYTHON_PDF2MD
constexpr bool kWithPdf2md = true;
#else
constexpr bool kWithPdf2md = false;
#endif
#if RAYORCH_PYTHON_VIDEO
constexpr bool kWithVideo = true;
#else
constexpr bool kWithVideo = false;
#endif

#if RAYORCH_PYTHON_VIDEO
/// video::SampleFrames with its sampling configuration as two constructor arguments.
// The content cut detector (video/cuts.h), the C++ pipeline's default: its ratio, least
// score, shortest scene and longest transition, as `rayorch video2jsonl` takes them.
struct VideoDetectCuts : video::DetectScenes {
  VideoDetectCuts(double ratio, double min_score, double min_scene_seconds,
                  double max_transition_seconds)
      : video::DetectScenes(
            video::SceneDetection{.method = video::CutMethod::content,
                                  .adaptive_ratio = ratio,
                                  .min_score = min_score,
                                  .min_scene_seconds = min_scene_seconds,
                                  .max_transition_seconds = max_transition_seconds}) {}
};

struct VideoSampleFrames : video::SampleFrames {
  VideoSampleFrames(int every, int per_scene)
      : video::SampleFrames(video::SamplingConfig{.every = every, .per_scene = per_scene}) {}
};
#endif

}  // namespace

const std::map<std::string, CppUdf>& cpp_udfs() {
  namespace u = rayorch::python_udfs;
  static const std::map<std::string, CppUdf> udfs = {
    {"Upper", register_cpp<u::Upper>("str -> the string upper-cased", "()")},
    {"SumNonEmpty",
     register_cpp<u::SumNonEmpty>(
         "list[int] (a reduced group) -> its sum; an empty group is a RecordFailure", "()")},
    {"SimRender",
     register_cpp<u::SimRender, double>(
         "(doc, pages) -> [(doc, 0), ..., (doc, pages-1)]; sleeps per_page_ms per page",
         "(per_page_ms: float)")},
    {"SimOcr", register_cpp<u::SimOcr, double, double>(
                   "(doc, page) -> doc * 10**6 + page; sleeps per_batch_ms + per_page_ms per page",
                   "(per_batch_ms: float, per_page_ms: float)")},
    {"SimAssemble",
     register_cpp<u::SimAssemble, double, double>(
         "(page values: list[int], (doc, pages)) -> (doc, page values); sleeps per_doc_ms + "
         "per_page_ms per page",
         "(per_doc_ms: float, per_page_ms: float)")},
#if RAYORCH_PYTHON_PDF2MD
    {"Pdf2mdOpen",
     register_cpp<pdf2md::OpenPdf>(
         "PDF path -> (list[PageRef], DocumentInfo); an unreadable PDF is a RecordFailure", "()")},
    {"Pdf2mdRender", register_cpp<pdf2md::RenderPage, int>(
                         "(PDF path, PageRef) -> PageImage (grayscale) at `dpi`; a page that "
                         "cannot be rendered is a GroupFailure of its document",
                         "(dpi: int)")},
    {"Pdf2mdOcr",
     register_cpp<pdf2md::OcrPage, std::string, std::string>(
         "PageImage -> its text (Tesseract, one engine per actor)", "(lang: str, tessdata: str)")},
    {"Pdf2mdAssemble",
     register_cpp<pdf2md::Assemble>(
         "(page texts: list[str], DocumentInfo) -> Markdown (a heading per page)", "()")},
#endif
#if RAYORCH_PYTHON_VIDEO
    {"VideoOpen", register_cpp<video::OpenVideo>(
                      "video path -> VideoInfo; an unreadable video is a RecordFailure", "()")},
    {"VideoDetectScenes",
     register_cpp<video::DetectScenes, double, int>(
         "VideoInfo -> list[Scene] in order (cuts where the mean absolute gray difference of "
         "consecutive frames exceeds `threshold`)",
         "(threshold: float, analysis_width: int)")},
    {"VideoDetectCuts",
     register_cpp<VideoDetectCuts, double, double, double, double>(
         "VideoInfo -> list[Scene] in order (the content detector, docs/VIDEO.md: a cut stands "
         "out `ratio` times against its neighbours and scores at least `min_score`; fades and "
         "dissolves count once)",
         "(ratio: float, min_score: float, min_scene_seconds: float, "
         "max_transition_seconds: float)")},
    {"VideoSampleFrames",
     register_cpp<VideoSampleFrames, int, int>(
         "Scene -> list[FrameRef] (every Nth frame, or K per scene: exactly one positive)",
         "(every: int, per_scene: int)")},
    {"VideoDecodeFrame", register_cpp<video::DecodeFrame, int>(
                             "(video path, FrameRef) -> FrameImage (gray, at most `max_width` "
                             "wide); one cached decoder per actor",
                             "(max_width: int)")},
    {"VideoOcrFrame",
     register_cpp<video::OcrFrame, std::string, std::string>(
         "FrameImage -> its text (Tesseract, one engine per actor)", "(lang: str, tessdata: str)")},
    {"VideoFrameSignature",
     register_cpp<video::FrameSignature>("FrameImage -> its 64-bit difference hash", "()")},
    {"VideoSummarizeScene",
     register_cpp<video::SummarizeScene, int>(
         "(texts: list[str], signatures: list[int], frames: list[FrameRef], Scene) -> "
         "SceneRecord",
         "(near_duplicate_bits: int)")},
    {"VideoAssemble", register_cpp<video::AssembleVideo>(
                          "(scenes: list[SceneRecord], VideoInfo) -> VideoRecord", "()")},
#endif
  };
  return udfs;
}

const std::vector<OptionalStages>& optional_stages() {
  // The names repeat those registered above: python/tests/test_cpp_udfs.py checks that a
  // built workload registers exactly these.
  static const std::vector<OptionalStages> workloads = {
      {.workload = "pdf2md",
       .stages = {"Pdf2mdOpen", "Pdf2mdRender", "Pdf2mdOcr", "Pdf2mdAssemble"},
       .needs = "poppler-cpp, tesseract, cairo",
       .built = kWithPdf2md},
      {.workload = "video",
       .stages = {"VideoOpen", "VideoDetectScenes", "VideoDetectCuts", "VideoSampleFrames",
                  "VideoDecodeFrame", "VideoOcrFrame", "VideoFrameSignature", "VideoSummarizeScene",
                  "VideoAssemble"},
       .needs = "libavformat, libavcodec, libswscale, libavutil, tesseract, cairo",
       .built = kWithVideo},
  };
  return workloads;
}

}  // namespace rayorch::python
