// Drawing the footage corpus: poppler renders document regions, cairo composes frames from
// them and from pictures, libavcodec encodes. See footage_film.h.
#include "video/footage_film.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/cairo_check.h"
#include "common/text.h"
#include <fmt/format.h>
#include <poppler/cpp/poppler-page-renderer.h>

namespace video::footage {
namespace {

using workloads::check_cairo;

// Document pages are rendered at 2 pixels per point: 10-point text is 20 pixels tall, the
// size of text in a screen recording or a lecture slide.
constexpr double kPixelsPerPoint = 2.0;
// A region is a slide only when it holds at least this many words.
constexpr std::size_t kMinSlideWords = 25;

}  // namespace

Surface make_surface(int width, int height) {
  Surface s(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height), cairo_surface_destroy);
  check_cairo(cairo_surface_status(s.get()), "cannot create a drawing surface");
  return s;
}

Surface load_picture(const std::string& path) {
  Surface s(cairo_image_surface_create_from_png(path.c_str()), cairo_surface_destroy);
  if (cairo_surface_status(s.get()) != CAIRO_STATUS_SUCCESS) {
    throw std::runtime_error(fmt::format("make_footage: cannot read picture {}", path));
  }
  return s;
}

RegionSource::RegionSource(const std::vector<std::string>& documents, int width, int height)
    : documents_(documents), width_(width), height_(height) {
  if (documents_.empty()) throw std::invalid_argument("make_footage: no documents");
}

Region RegionSource::next() {
  for (int attempts = 0; attempts < 2000; ++attempts) {
    if (!doc_) open(documents_[doc_index_ % documents_.size()]);
    if (page_ >= doc_->pages()) {
      doc_.reset();
      ++doc_index_;
      page_ = 0;
      continue;
    }
    std::unique_ptr<poppler::page> page(doc_->create_page(page_++));
    if (!page) continue;
    Region r = render(*page);
    if (workloads::words_of(r.text).size() >= kMinSlideWords) return r;
  }
  throw std::runtime_error("make_footage: the documents have too few pages with text");
}

void RegionSource::open(const std::string& path) {
  doc_.reset(poppler::document::load_from_file(path));
  if (!doc_ || doc_->is_locked()) {
    throw std::runtime_error(fmt::format("make_footage: cannot read document {}", path));
  }
}

Region RegionSource::render(const poppler::page& page) {
  const poppler::rectf box = page.page_rect();
  // Centred horizontally; from the top margin down.
  const double x_pt = std::max(0.0, (box.width() - width_ / kPixelsPerPoint) / 2);
  const double y_pt = 60.0;
  poppler::page_renderer renderer;
  renderer.set_render_hint(poppler::page_renderer::antialiasing, true);
  renderer.set_render_hint(poppler::page_renderer::text_antialiasing, true);
  renderer.set_image_format(poppler::image::format_argb32);
  const double dpi = 72.0 * kPixelsPerPoint;
  poppler::image img =
      renderer.render_page(&page, dpi, dpi, static_cast<int>(x_pt * kPixelsPerPoint),
                           static_cast<int>(y_pt * kPixelsPerPoint), width_, height_);
  Region r;
  if (!img.is_valid() || img.width() != width_ || img.height() != height_) return r;
  r.image = make_surface(width_, height_);
  cairo_surface_flush(r.image.get());
  auto* dst = cairo_image_surface_get_data(r.image.get());
  const int dst_stride = cairo_image_surface_get_stride(r.image.get());
  for (int y = 0; y < height_; ++y) {
    std::copy_n(img.const_data() + static_cast<std::size_t>(y) * img.bytes_per_row(), 4 * width_,
                reinterpret_cast<char*>(dst) + static_cast<std::size_t>(y) * dst_stride);
  }
  cairo_surface_mark_dirty(r.image.get());
  const poppler::rectf region(x_pt, y_pt, width_ / kPixelsPerPoint, height_ / kPixelsPerPoint);
  const poppler::byte_array utf8 = page.text(region).to_utf8();
  r.text.assign(utf8.begin(), utf8.end());
  return r;
}

Film::Film(const std::filesystem::path& path, const FootageOptions& o, std::uint64_t seed)
    : o_(o),
      frame_(make_surface(o.width, o.height)),
      cr_(cairo_create(frame_.get()), cairo_destroy),
      writer_(path.string(),
              EncoderOptions{.width = o.width, .height = o.height, .fps = o.fps, .gop = 2 * o.fps}),
      rng_(seed) {
  video_.video = path.stem().string();
  video_.file = path.filename().string();
  video_.fps = o.fps;
}

void Film::frame(const std::function<void(cairo_t*)>& draw) {
  cairo_save(cr_.get());
  cairo_set_source_rgb(cr_.get(), 0, 0, 0);
  cairo_paint(cr_.get());
  if (noise_ > 0) {
    // A hand-held camera: the picture shakes by up to a pixel.
    cairo_translate(cr_.get(), static_cast<double>(rng_.below(3)) - 1.0,
                    static_cast<double>(rng_.below(3)) - 1.0);
  }
  draw(cr_.get());
  cairo_restore(cr_.get());
  check_cairo(cairo_status(cr_.get()), "cannot draw a frame of " + video_.file);
  cairo_surface_flush(frame_.get());
  if (noise_ > 0) add_noise();
  writer_.write_bgra(cairo_image_surface_get_data(frame_.get()),
                     cairo_image_surface_get_stride(frame_.get()));
}

void Film::still(const Region& r, int frames) {
  FootageSlide slide{position(), position() + static_cast<std::uint64_t>(frames) - 1, r.text};
  for (int f = 0; f < frames; ++f) frame([&](cairo_t* cr) { paint(cr, r.image.get(), 0, 1); });
  video_.slides.push_back(std::move(slide));
}

void Film::hold(cairo_surface_t* picture, int frames) {
  for (int f = 0; f < frames; ++f) frame([&](cairo_t* cr) { paint(cr, picture, 0, 1); });
}

void Film::hard_cut() {
  video_.cuts.push_back({position(), position(), "cut"});
}

void Film::dissolve(cairo_surface_t* a, cairo_surface_t* b, int frames) {
  const std::uint64_t first = position();
  for (int f = 1; f <= frames; ++f) {
    const double t = static_cast<double>(f) / (frames + 1);
    frame([&](cairo_t* cr) {
      paint(cr, a, 0, 1);
      paint(cr, b, 0, t);
    });
  }
  video_.cuts.push_back({first, position(), "dissolve"});
}

void Film::fade(cairo_surface_t* a, cairo_surface_t* b, int frames) {
  const std::uint64_t first = position();
  for (int f = 1; f <= frames; ++f) {
    frame([&](cairo_t* cr) { paint(cr, a, 0, 1.0 - static_cast<double>(f) / (frames + 1)); });
  }
  for (int f = 0; f < 2; ++f) frame([](cairo_t*) {});
  for (int f = 1; f <= frames; ++f) {
    frame([&](cairo_t* cr) { paint(cr, b, 0, static_cast<double>(f) / (frames + 1)); });
  }
  video_.cuts.push_back({first, position(), "fade"});
}

void Film::pan(cairo_surface_t* picture, int frames) {
  const std::uint64_t first = position();
  for (int f = 0; f < frames; ++f) {
    const double t = frames > 1 ? static_cast<double>(f) / (frames - 1) : 0.0;
    frame([&](cairo_t* cr) { cover(cr, picture, 1.3, t, 0.5); });
  }
  video_.motion.push_back({first, position() - 1, "pan"});
}

void Film::zoom(cairo_surface_t* picture, int frames) {
  const std::uint64_t first = position();
  for (int f = 0; f < frames; ++f) {
    const double t = frames > 1 ? static_cast<double>(f) / (frames - 1) : 0.0;
    frame([&](cairo_t* cr) { cover(cr, picture, 1.0 + 0.6 * t, 0.5, 0.5); });
  }
  video_.motion.push_back({first, position() - 1, "zoom"});
}

void Film::scroll(cairo_surface_t* tall, int frames) {
  const std::uint64_t first = position();
  const double travel = cairo_image_surface_get_height(tall) - o_.height;
  for (int f = 0; f < frames; ++f) {
    const double y = frames > 1 ? std::round(travel * f / (frames - 1)) : 0.0;
    frame([&](cairo_t* cr) { paint(cr, tall, -y, 1); });
  }
  video_.motion.push_back({first, position() - 1, "scroll"});
}

FootageVideo Film::finish() {
  writer_.finish();
  video_.frames = position();
  return std::move(video_);
}

void Film::paint(cairo_t* cr, cairo_surface_t* s, double y, double alpha) {
  cairo_set_source_surface(cr, s, 0, y);
  cairo_paint_with_alpha(cr, alpha);
}

// The picture scaled to cover the frame `scale` times; (cx, cy) in 0..1 choose which part.
void Film::cover(cairo_t* cr, cairo_surface_t* picture, double scale, double cx, double cy) const {
  const double pw = cairo_image_surface_get_width(picture);
  const double ph = cairo_image_surface_get_height(picture);
  const double s = scale * std::max(o_.width / pw, o_.height / ph);
  cairo_translate(cr, -(pw * s - o_.width) * cx, -(ph * s - o_.height) * cy);
  cairo_scale(cr, s, s);
  cairo_set_source_surface(cr, picture, 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_BILINEAR);
  cairo_paint(cr);
}

// Sensor noise: each channel moves by a sum of uniform draws (about Gaussian).
void Film::add_noise() {
  auto* data = cairo_image_surface_get_data(frame_.get());
  const int stride = cairo_image_surface_get_stride(frame_.get());
  for (int y = 0; y < o_.height; ++y) {
    auto* row = data + static_cast<std::size_t>(y) * stride;
    for (int x = 0; x < 4 * o_.width; ++x) {
      if (x % 4 == 3) continue;
      const double n =
          (static_cast<double>(rng_.below(256)) + rng_.below(256) + rng_.below(256) - 382.5) /
          128.0 * noise_;
      row[x] = static_cast<std::uint8_t>(std::clamp(row[x] + std::lround(n), 0L, 255L));
    }
  }
  cairo_surface_mark_dirty(frame_.get());
}

}  // namespace video::footage
