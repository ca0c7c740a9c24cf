// Drawing the footage corpus (footage.h): document regions rendered by poppler, pictures read
// from PNG files, and a Film that composes frames from them with cairo, encodes them and
// records the known structure of the video (its cuts, slides and motion).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/sampling.h"
#include "video/encoder.h"
#include "video/footage.h"
#include <cairo/cairo.h>
#include <poppler/cpp/poppler-document.h>
#include <poppler/cpp/poppler-page.h>

namespace video::footage {

using Surface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using Context = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

/// An RGB24 surface; throws std::runtime_error when cairo cannot create it.
Surface make_surface(int width, int height);

/// A PNG picture; throws std::runtime_error when it cannot be read.
Surface load_picture(const std::string& path);

/// A document region with the text poppler reads in it.
struct Region {
  Surface image{nullptr, cairo_surface_destroy};
  std::string text;
};

/// Regions of the pages of the documents, in order: one per page, starting below the top
/// margin, `height` pixels tall (a scroll needs more than the frame). Keeps a reference to
/// `documents`, which must outlive it.
class RegionSource {
 public:
  RegionSource(const std::vector<std::string>& documents, int width, int height);

  /// The next region holding enough words to be a slide; throws std::runtime_error when a
  /// document cannot be read or too few pages have text.
  Region next();

 private:
  void open(const std::string& path);
  Region render(const poppler::page& page);

  const std::vector<std::string>& documents_;
  int width_, height_;
  std::unique_ptr<poppler::document> doc_;
  std::size_t doc_index_ = 0;
  int page_ = 0;
};

/// Writes frames of one video and records its known structure. Keeps a reference to the
/// options, which must outlive it.
class Film {
 public:
  Film(const std::filesystem::path& path, const FootageOptions& o, std::uint64_t seed);

  std::uint64_t position() const { return static_cast<std::uint64_t>(writer_.frames()); }
  void set_noise(double sigma) { noise_ = sigma; }

  /// One frame drawn by `draw` on a cleared context.
  void frame(const std::function<void(cairo_t*)>& draw);

  /// A document region that stays still: a slide, with its text.
  void still(const Region& r, int frames);
  /// A picture that stays still, without text to read.
  void hold(cairo_surface_t* picture, int frames);

  void hard_cut();
  void dissolve(cairo_surface_t* a, cairo_surface_t* b, int frames);
  /// Out to black, two black frames, in from black.
  void fade(cairo_surface_t* a, cairo_surface_t* b, int frames);

  /// A picture scaled to cover the frame 1.3 times, panned from its left to its right edge.
  void pan(cairo_surface_t* picture, int frames);
  /// A picture zoomed from covering the frame to 1.6 times that, about its centre.
  void zoom(cairo_surface_t* picture, int frames);
  /// A tall document region scrolled up from its top to its bottom, as on a screen.
  void scroll(cairo_surface_t* tall, int frames);

  /// Finishes the file and returns what the video holds.
  FootageVideo finish();

 private:
  static void paint(cairo_t* cr, cairo_surface_t* s, double y, double alpha);
  void cover(cairo_t* cr, cairo_surface_t* picture, double scale, double cx, double cy) const;
  void add_noise();

  const FootageOptions& o_;
  Surface frame_;
  Context cr_;
  VideoWriter writer_;
  workloads::SampleRng rng_;
  double noise_ = 0;
  FootageVideo video_;
};

}  // namespace video::footage
