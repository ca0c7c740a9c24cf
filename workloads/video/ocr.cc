// OcrFrame: burned-in text with Tesseract, one engine per actor. See video.h.
#include <memory>
#include <optional>

#include "common/tesseract.h"
#include "video/analysis.h"
#include "video/video.h"
#include <fmt/format.h>

namespace video {
namespace {

// Video frames carry no resolution; this is a typical screen's, which keeps Tesseract from
// guessing one per frame.
constexpr int kAssumedDpi = 96;

}  // namespace

struct OcrFrame::Engine {
  Engine(const std::string& lang, const std::string& tessdata)
      : tesseract("OcrFrame", lang, tessdata) {}
  workloads::TesseractEngine tesseract;

  /// The frame's text read with one layout; nullopt when Tesseract fails.
  std::optional<std::string> recognise(const FrameImage& f, workloads::PageLayout layout) {
    std::optional<std::string> text =
        tesseract.recognise(f.pixels.data(), f.width, f.height, kAssumedDpi, layout);
    if (text) *text = clean_text(*text);
    return text;
  }
};

OcrFrame::OcrFrame(std::string lang, std::string tessdata)
    : engine_(std::make_unique<Engine>(lang, tessdata)) {}

OcrFrame::~OcrFrame() = default;

std::vector<ro::Row<std::string>> OcrFrame::run(ro::Column<FrameImage> frames) {
  workloads::serialise_openmp_on_this_thread();
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
    std::optional<std::string> text = engine_->recognise(f, workloads::PageLayout::automatic);
    if (text && text->empty()) text = engine_->recognise(f, workloads::PageLayout::single_block);
    if (!text) {
      out.emplace_back(ro::RecordFailure{fmt::format("OCR failed on frame {}", f.frame)});
    } else {
      out.emplace_back(std::move(*text));
    }
  }
  return out;
}

}  // namespace video
