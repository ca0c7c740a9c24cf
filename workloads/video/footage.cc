// The real-material corpus: poppler renders document regions, cairo composes frames from them
// and from pictures, libavcodec encodes. See footage.h.
#include "video/footage.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>

#include "common/cairo_check.h"
#include "common/sampling.h"
#include "common/text.h"
#include "video/encoder.h"
#include <cairo/cairo.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <poppler/cpp/poppler-document.h>
#include <poppler/cpp/poppler-page-renderer.h>
#include <poppler/cpp/poppler-page.h>

namespace video {
namespace fs = std::filesystem;

namespace {

using Surface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using Context = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;
using workloads::check_cairo;

// Document pages are rendered at 2 pixels per point: 10-point text is 20 pixels tall, the
// size of text in a screen recording or a lecture slide.
constexpr double kPixelsPerPoint = 2.0;
// A region is a slide only when it holds at least this many words.
constexpr std::size_t kMinSlideWords = 25;

Surface make_surface(int width, int height) {
  Surface s(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height), cairo_surface_destroy);
  check_cairo(cairo_surface_status(s.get()), "cannot create a drawing surface");
  return s;
}

// A document region with the text poppler reads in it.
struct Region {
  Surface image{nullptr, cairo_surface_destroy};
  std::string text;
};

// Regions of the pages of the documents, in order: one per page, starting below the top
// margin, `height` pixels tall (a scroll needs more than the frame).
class RegionSource {
 public:
  RegionSource(const std::vector<std::string>& documents, int width, int height)
      : documents_(documents), width_(width), height_(height) {
    if (documents_.empty()) throw std::invalid_argument("make_footage: no documents");
  }

  Region next() {
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

 private:
  void open(const std::string& path) {
    doc_.reset(poppler::document::load_from_file(path));
    if (!doc_ || doc_->is_locked()) {
      throw std::runtime_error(fmt::format("make_footage: cannot read document {}", path));
    }
  }

  Region render(const poppler::page& page) {
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

  const std::vector<std::string>& documents_;
  int width_, height_;
  std::unique_ptr<poppler::document> doc_;
  std::size_t doc_index_ = 0;
  int page_ = 0;
};

Surface load_picture(const std::string& path) {
  Surface s(cairo_image_surface_create_from_png(path.c_str()), cairo_surface_destroy);
  if (cairo_surface_status(s.get()) != CAIRO_STATUS_SUCCESS) {
    throw std::runtime_error(fmt::format("make_footage: cannot read picture {}", path));
  }
  return s;
}

// Writes frames of one video and records its known structure.
class Film {
 public:
  Film(const fs::path& path, const FootageOptions& o, std::uint64_t seed)
      : o_(o),
        frame_(make_surface(o.width, o.height)),
        cr_(cairo_create(frame_.get()), cairo_destroy),
        writer_(
            path.string(),
            EncoderOptions{.width = o.width, .height = o.height, .fps = o.fps, .gop = 2 * o.fps}),
        rng_(seed) {
    video_.video = path.stem().string();
    video_.file = path.filename().string();
    video_.fps = o.fps;
  }

  std::uint64_t position() const { return static_cast<std::uint64_t>(writer_.frames()); }
  void set_noise(double sigma) { noise_ = sigma; }

  // One frame drawn by `draw` on a cleared context.
  void frame(const std::function<void(cairo_t*)>& draw) {
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

  void still(const Region& r, int frames) {
    FootageSlide slide{position(), position() + static_cast<std::uint64_t>(frames) - 1, r.text};
    for (int f = 0; f < frames; ++f) frame([&](cairo_t* cr) { paint(cr, r.image.get(), 0, 1); });
    video_.slides.push_back(std::move(slide));
  }

  // A picture that stays still, without text to read.
  void hold(cairo_surface_t* picture, int frames) {
    for (int f = 0; f < frames; ++f) frame([&](cairo_t* cr) { paint(cr, picture, 0, 1); });
  }

  void hard_cut() { video_.cuts.push_back({position(), position(), "cut"}); }

  void dissolve(cairo_surface_t* a, cairo_surface_t* b, int frames) {
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

  // Out to black, two black frames, in from black.
  void fade(cairo_surface_t* a, cairo_surface_t* b, int frames) {
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

  // A picture scaled to cover the frame 1.3 times, panned from its left to its right edge.
  void pan(cairo_surface_t* picture, int frames) {
    const std::uint64_t first = position();
    for (int f = 0; f < frames; ++f) {
      const double t = frames > 1 ? static_cast<double>(f) / (frames - 1) : 0.0;
      frame([&](cairo_t* cr) { cover(cr, picture, 1.3, t, 0.5); });
    }
    video_.motion.push_back({first, position() - 1, "pan"});
  }

  // A picture zoomed from covering the frame to 1.6 times that, about its centre.
  void zoom(cairo_surface_t* picture, int frames) {
    const std::uint64_t first = position();
    for (int f = 0; f < frames; ++f) {
      const double t = frames > 1 ? static_cast<double>(f) / (frames - 1) : 0.0;
      frame([&](cairo_t* cr) { cover(cr, picture, 1.0 + 0.6 * t, 0.5, 0.5); });
    }
    video_.motion.push_back({first, position() - 1, "zoom"});
  }

  // A tall document region scrolled up from its top to its bottom, as on a screen.
  void scroll(cairo_surface_t* tall, int frames) {
    const std::uint64_t first = position();
    const double travel = cairo_image_surface_get_height(tall) - o_.height;
    for (int f = 0; f < frames; ++f) {
      const double y = frames > 1 ? std::round(travel * f / (frames - 1)) : 0.0;
      frame([&](cairo_t* cr) { paint(cr, tall, -y, 1); });
    }
    video_.motion.push_back({first, position() - 1, "scroll"});
  }

  FootageVideo finish() {
    writer_.finish();
    video_.frames = position();
    return std::move(video_);
  }

 private:
  static void paint(cairo_t* cr, cairo_surface_t* s, double y, double alpha) {
    cairo_set_source_surface(cr, s, 0, y);
    cairo_paint_with_alpha(cr, alpha);
  }

  // The picture scaled to cover the frame `scale` times; (cx, cy) in 0..1 choose which part.
  void cover(cairo_t* cr, cairo_surface_t* picture, double scale, double cx, double cy) const {
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
  void add_noise() {
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

  const FootageOptions& o_;
  Surface frame_;
  Context cr_;
  VideoWriter writer_;
  workloads::SampleRng rng_;
  double noise_ = 0;
  FootageVideo video_;
};

nlohmann::json to_json(const FootageVideo& v) {
  nlohmann::json cuts = nlohmann::json::array(), slides = nlohmann::json::array(),
                 motion = nlohmann::json::array();
  for (const auto& c : v.cuts)
    cuts.push_back({{"first", c.first}, {"last", c.last}, {"kind", c.kind}});
  for (const auto& s : v.slides) {
    slides.push_back(
        {{"first_frame", s.first_frame}, {"last_frame", s.last_frame}, {"text", s.text}});
  }
  for (const auto& m : v.motion) {
    motion.push_back(
        {{"first_frame", m.first_frame}, {"last_frame", m.last_frame}, {"kind", m.kind}});
  }
  return {{"video", v.video}, {"file", v.file},   {"fps", v.fps},    {"frames", v.frames},
          {"cuts", cuts},     {"slides", slides}, {"motion", motion}};
}

}  // namespace

const std::vector<std::string>& default_footage_documents() {
  static const std::vector<std::string> d = {
      "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
      "/usr/share/doc/libtasn1-doc/libtasn1.pdf",
  };
  return d;
}

const std::vector<std::string>& default_footage_pictures() {
  static const std::vector<std::string> p = {
      "/usr/share/doc/libleptonica-dev/dave-orig.png",
      "/usr/share/desktop-base/homeworld-theme/grub/grub-16x9.png",
      "/usr/share/desktop-base/joy-theme/grub/grub-16x9.png",
  };
  return p;
}

FootageCorpus make_footage(const std::string& dir, const FootageOptions& o) {
  if (o.width < 64 || o.height < 64 || o.width % 2 != 0 || o.height % 2 != 0 || o.fps < 1 ||
      o.slides < 2 || o.slide_frames < 2 || o.transition_frames < 1 || o.motion_frames < 2 ||
      o.pictures.size() < 2) {
    throw std::invalid_argument(
        "make_footage: need an even size of at least 64x64, fps >= 1, slides >= 2, slide "
        "frames >= 2, transition frames >= 1, motion frames >= 2 and two pictures");
  }
  const fs::path root(dir);
  fs::create_directories(root);
  RegionSource regions(o.documents, o.width, o.height);
  RegionSource tall_regions(o.documents, o.width, 2 * o.height);
  std::vector<Surface> pictures;
  for (const std::string& p : o.pictures) pictures.push_back(load_picture(p));

  FootageCorpus corpus;
  corpus.dir = dir;
  std::uint64_t seed = o.seed;
  auto slideshow = [&](const std::string& name, const std::string& transition, double noise) {
    Film film(root / (name + ".mp4"), o, seed++);
    film.set_noise(noise);
    Region previous = regions.next();
    film.still(previous, o.slide_frames);
    for (int s = 1; s < o.slides; ++s) {
      Region next = regions.next();
      // The noisy slideshow alternates: its changes are not all of one kind.
      const std::string kind =
          transition == "mixed" ? (s % 2 == 1 ? "cut" : "dissolve") : transition;
      if (kind == "cut") {
        film.hard_cut();
      } else if (kind == "dissolve") {
        film.dissolve(previous.image.get(), next.image.get(), o.transition_frames);
      } else {
        film.fade(previous.image.get(), next.image.get(), o.transition_frames);
      }
      film.still(next, o.slide_frames);
      previous = std::move(next);
    }
    corpus.videos.push_back(film.finish());
  };
  slideshow("slides-cut", "cut", 0);
  slideshow("slides-dissolve", "dissolve", 0);
  slideshow("slides-fade", "fade", 0);
  slideshow("slides-camera", "mixed", 6.0);

  {  // Pan, hard cut, zoom, dissolve, pan: two cuts, none inside the motion.
    Film film(root / "pictures.mp4", o, seed++);
    cairo_surface_t* a = pictures[0].get();
    cairo_surface_t* b = pictures[1 % pictures.size()].get();
    cairo_surface_t* c = pictures[2 % pictures.size()].get();
    film.pan(a, o.motion_frames);
    film.hard_cut();
    film.zoom(b, o.motion_frames);
    // The dissolve runs between the zoom's last picture and the next pan's first.
    Surface from = make_surface(o.width, o.height), to = make_surface(o.width, o.height);
    {
      Context cr(cairo_create(from.get()), cairo_destroy);
      const double pw = cairo_image_surface_get_width(b), ph = cairo_image_surface_get_height(b);
      const double s = 1.6 * std::max(o.width / pw, o.height / ph);
      cairo_translate(cr.get(), -(pw * s - o.width) / 2, -(ph * s - o.height) / 2);
      cairo_scale(cr.get(), s, s);
      cairo_set_source_surface(cr.get(), b, 0, 0);
      cairo_paint(cr.get());
      Context cr2(cairo_create(to.get()), cairo_destroy);
      const double qw = cairo_image_surface_get_width(c), qh = cairo_image_surface_get_height(c);
      const double u = 1.3 * std::max(o.width / qw, o.height / qh);
      cairo_translate(cr2.get(), 0, -(qh * u - o.height) / 2);
      cairo_scale(cr2.get(), u, u);
      cairo_set_source_surface(cr2.get(), c, 0, 0);
      cairo_paint(cr2.get());
    }
    // Still frames around the dissolve: one that runs during motion is not told from it.
    film.hold(from.get(), o.slide_frames);
    film.dissolve(from.get(), to.get(), o.transition_frames);
    film.hold(to.get(), o.slide_frames);
    film.pan(c, o.motion_frames);
    corpus.videos.push_back(film.finish());
  }
  {  // A screen recording: a page shown, scrolled, a hard cut to another, scrolled.
    Film film(root / "screen.mp4", o, seed++);
    for (int page = 0; page < 2; ++page) {
      if (page > 0) film.hard_cut();
      Region tall = tall_regions.next();
      Region top;  // the first screenful, shown still before scrolling
      top.image = make_surface(o.width, o.height);
      {
        Context cr(cairo_create(top.image.get()), cairo_destroy);
        cairo_set_source_surface(cr.get(), tall.image.get(), 0, 0);
        cairo_paint(cr.get());
      }
      film.still(top, o.slide_frames);
      film.scroll(tall.image.get(), o.motion_frames);
    }
    FootageVideo v = film.finish();
    v.slides.clear();  // the screen's text is scored by the slideshows; here only the cuts count
    corpus.videos.push_back(std::move(v));
  }

  std::string expected;
  for (const FootageVideo& v : corpus.videos) expected += to_json(v).dump() + "\n";
  std::ofstream out(root / "footage.jsonl", std::ios::binary | std::ios::trunc);
  out << expected;
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write {}/footage.jsonl", dir));
  return corpus;
}

FootageCorpus load_footage(const std::string& dir) {
  const fs::path path = fs::path(dir) / "footage.jsonl";
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", path.string()));
  FootageCorpus corpus;
  corpus.dir = dir;
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      FootageVideo v;
      v.video = j.at("video").get<std::string>();
      v.file = j.at("file").get<std::string>();
      v.fps = j.value("fps", 0);
      v.frames = j.at("frames").get<std::uint64_t>();
      for (const auto& c : j.at("cuts")) {
        v.cuts.push_back({c.at("first").get<std::uint64_t>(), c.at("last").get<std::uint64_t>(),
                          c.at("kind").get<std::string>()});
      }
      for (const auto& s : j.at("slides")) {
        v.slides.push_back({s.at("first_frame").get<std::uint64_t>(),
                            s.at("last_frame").get<std::uint64_t>(),
                            s.at("text").get<std::string>()});
      }
      for (const auto& m : j.at("motion")) {
        v.motion.push_back({m.at("first_frame").get<std::uint64_t>(),
                            m.at("last_frame").get<std::uint64_t>(),
                            m.at("kind").get<std::string>()});
      }
      corpus.videos.push_back(std::move(v));
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("{}:{}: {}", path.string(), number, e.what()));
    }
  }
  return corpus;
}

}  // namespace video
