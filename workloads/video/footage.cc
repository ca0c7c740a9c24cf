// The real-material corpus: which videos it holds and how each is made (footage_film.h
// draws them), and its description DIR/footage.jsonl. See footage.h.
#include "video/footage.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "video/footage_film.h"
#include <cairo/cairo.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace video {
namespace fs = std::filesystem;

namespace {

using footage::Context;
using footage::Film;
using footage::load_picture;
using footage::make_surface;
using footage::Region;
using footage::RegionSource;
using footage::Surface;

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
