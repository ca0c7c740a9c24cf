// The workloads' Tesseract engine. See tesseract.h.
#include "common/tesseract.h"

#include <dlfcn.h>

#include <stdexcept>

#include <fmt/format.h>
#include <tesseract/baseapi.h>

namespace workloads {

void serialise_openmp_on_this_thread() {
  using SetLevels = void (*)(int);
  static const auto set_levels =
      reinterpret_cast<SetLevels>(::dlsym(RTLD_DEFAULT, "omp_set_max_active_levels"));
  if (set_levels != nullptr) set_levels(0);
}

struct TesseractEngine::Api {
  tesseract::TessBaseAPI api;
};

TesseractEngine::TesseractEngine(std::string_view owner, const std::string& lang,
                                 const std::string& tessdata)
    : api_(std::make_unique<Api>()) {
  serialise_openmp_on_this_thread();
  const char* datapath = tessdata.empty() ? nullptr : tessdata.c_str();
  if (api_->api.Init(datapath, lang.c_str(), tesseract::OEM_LSTM_ONLY) != 0) {
    throw std::runtime_error(fmt::format(
        "{}: cannot load Tesseract language '{}' from {}; install tesseract-ocr-{} or pass "
        "--tessdata",
        owner, lang, tessdata.empty() ? "the default tessdata directory" : tessdata, lang));
  }
  // Diagnostics go nowhere: an image either yields text or its stage reports a failure.
  api_->api.SetVariable("debug_file", "/dev/null");
}

TesseractEngine::~TesseractEngine() {
  if (api_) api_->api.End();
}

std::optional<std::string> TesseractEngine::recognise(const std::uint8_t* pixels,
                                                      std::uint32_t width, std::uint32_t height,
                                                      int dpi, PageLayout layout) {
  tesseract::TessBaseAPI& api = api_->api;
  api.SetPageSegMode(layout == PageLayout::single_block ? tesseract::PSM_SINGLE_BLOCK
                                                        : tesseract::PSM_AUTO);
  api.SetImage(pixels, static_cast<int>(width), static_cast<int>(height), 1,
               static_cast<int>(width));
  api.SetSourceResolution(dpi);
  std::unique_ptr<char[]> text(api.GetUTF8Text());
  api.Clear();
  if (!text) return std::nullopt;
  return std::string(text.get());
}

}  // namespace workloads
