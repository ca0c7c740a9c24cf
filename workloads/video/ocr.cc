// OcrFrame: burned-in text with Tesseract, one engine per actor. See video.h.
#include <dlfcn.h>

#include <memory>
#include <optional>
#include <stdexcept>

#include "video/analysis.h"
#include "video/video.h"
#include <fmt/format.h>
#include <tesseract/baseapi.h>

namespace video {
namespace {

// libgomp reads OMP_THREAD_LIMIT only at process start; limiting active parallel levels on
// the actor's thread keeps Tesseract's parallel regions on that thread. Looked up at run time
// so a Tesseract built without OpenMP needs nothing.
void serialise_openmp_on_this_thread() {
  using SetLevels = void (*)(int);
  static const auto set_levels =
      reinterpret_cast<SetLevels>(::dlsym(RTLD_DEFAULT, "omp_set_max_active_levels"));
  if (set_levels != nullptr) set_levels(0);
}

// Video frames carry no resolution; this is a typical screen's, which keeps Tesseract from
// guessing one per frame.
constexpr int kAssumedDpi = 96;

}  // namespace

struct OcrFrame::Engine {
  tesseract::TessBaseAPI api;
  /// The frame's text read with one page segmentation mode; nullopt when Tesseract fails.
  std::optional<std::string> recognise(const FrameImage& frame, tesseract::PageSegMode mode);
};

OcrFrame::OcrFrame(std::string lang, std::string tessdata) : engine_(std::make_unique<Engine>()) {
  serialise_openmp_on_this_thread();
  const char* datapath = tessdata.empty() ? nullptr : tessdata.c_str();
  if (engine_->api.Init(datapath, lang.c_str(), tesseract::OEM_LSTM_ONLY) != 0) {
    throw std::runtime_error(fmt::format(
        "OcrFrame: cannot load Tesseract language '{}' from {}; install tesseract-ocr-{} or pass "
        "--tessdata",
        lang, tessdata.empty() ? "the default tessdata directory" : tessdata, lang));
  }
  engine_->api.SetVariable("debug_file", "/dev/null");
}

OcrFrame::~OcrFrame() {
  if (engine_) engine_->api.End();
}

std::optional<std::string> OcrFrame::Engine::recognise(const FrameImage& f,
                                                       tesseract::PageSegMode mode) {
  api.SetPageSegMode(mode);
  api.SetImage(f.pixels.data(), static_cast<int>(f.width), static_cast<int>(f.height), 1,
               static_cast<int>(f.width));
  api.SetSourceResolution(kAssumedDpi);
  std::unique_ptr<char[]> text(api.GetUTF8Text());
  api.Clear();
  if (!text) return std::nullopt;
  return clean_text(text.get());
}

std::vector<ro::Row<std::string>> OcrFrame::run(ro::Column<FrameImage> frames) {
  serialise_openmp_on_this_thread();  // the executor may run this on any pool thread
  std::vector<ro::Row<std::string>> out;
  out.reserve(frames.size());
  for (const FrameImage& f : frames) {
    if (f.width == 0 || f.height == 0 ||
        f.pixels.size() != static_cast<std::size_t>(f.width) * f.height) {
      out.emplace_back(ro::RecordFailure{fmt::format("frame {} has no image", f.frame)});
      continue;
    }
    // Layout analysis finds captions anywhere in the frame and ignores most texture, but a
    // caption over stripes parallel to its lines can merge into them and vanish; reading
    // the frame as one block recovers it. Only frames without any text pay twice. (Sparse-text
    // mode, the obvious choice for scattered captions, misses large ones on small frames.)
    std::optional<std::string> text = engine_->recognise(f, tesseract::PSM_AUTO);
    if (text && text->empty()) text = engine_->recognise(f, tesseract::PSM_SINGLE_BLOCK);
    if (!text) {
      out.emplace_back(ro::RecordFailure{fmt::format("OCR failed on frame {}", f.frame)});
    } else {
      out.emplace_back(std::move(*text));
    }
  }
  return out;
}

}  // namespace video
