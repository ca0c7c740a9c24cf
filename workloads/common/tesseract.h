// One Tesseract engine for the OCR stages of the workloads: loading it with a useful error,
// keeping it on the calling thread, and reading one grey image.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace workloads {

/// How Tesseract looks for text in an image.
enum class PageLayout {
  automatic,     ///< layout analysis: blocks anywhere on the image
  single_block,  ///< the whole image as one block of text
};

/// A Tesseract engine with the LSTM recogniser, owned by one actor. Not thread-safe: one
/// engine serves one call at a time, and every call keeps Tesseract's parallel regions on
/// the calling thread (the pool's replicas are the parallelism).
class TesseractEngine {
 public:
  /// Loads `lang` from `tessdata` (empty: Tesseract's built-in data directory). Throws
  /// std::runtime_error, whose message starts with `owner`, when the language cannot be loaded.
  TesseractEngine(std::string_view owner, const std::string& lang, const std::string& tessdata);
  ~TesseractEngine();
  TesseractEngine(const TesseractEngine&) = delete;
  TesseractEngine& operator=(const TesseractEngine&) = delete;

  /// The UTF-8 text of a `width` x `height` image of one byte per pixel, rows packed, at
  /// `dpi`; nullopt when Tesseract fails.
  std::optional<std::string> recognise(const std::uint8_t* pixels, std::uint32_t width,
                                       std::uint32_t height, int dpi, PageLayout layout);

 private:
  struct Api;
  std::unique_ptr<Api> api_;
};

/// libgomp reads OMP_THREAD_LIMIT once, when the process starts, so setting it from an actor
/// would be too late. Limiting the active parallel levels to zero on the calling thread makes
/// every parallel region inside Tesseract run on that thread alone; an executor may run a
/// stage on any thread of its pool, so each call does this first. The symbol is looked up at
/// run time so a Tesseract built without OpenMP needs nothing.
void serialise_openmp_on_this_thread();

}  // namespace workloads
