// Corpus generation: cairo draws each frame, libavcodec encodes it. See samples.h.
#include "video/samples.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "common/cairo_check.h"
#include "common/sampling.h"
#include "video/encoder.h"
#include <cairo/cairo.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace video {
namespace fs = std::filesystem;

namespace {

// Dictionary words: Tesseract's language model knows them, so measured accuracy reflects
// recognition of the frames, not vocabulary.
constexpr const char* kWords[] = {
    "river",    "garden",  "market",  "winter",  "summer",  "forest",  "island",  "bridge",
    "harbor",   "valley",  "station", "window",  "morning", "evening", "kitchen", "library",
    "mountain", "village", "weather", "picture", "country", "engine",  "machine", "school",
    "ocean",    "north",   "south",   "street",  "stone",   "travel",  "wonder",  "family",
};
constexpr std::size_t kWordCount = sizeof(kWords) / sizeof(kWords[0]);

using Rng = workloads::SampleRng;

struct Rgb {
  double r, g, b;
  double luma() const { return 255.0 * (0.299 * r + 0.587 * g + 0.114 * b); }
};

// Backgrounds spread over the brightness range, so any two consecutive scenes can be told
// apart by brightness alone.
constexpr Rgb kPalette[] = {
    {0.10, 0.10, 0.35}, {0.45, 0.05, 0.05}, {0.05, 0.35, 0.10}, {0.30, 0.30, 0.30},
    {0.85, 0.45, 0.10}, {0.20, 0.65, 0.85}, {0.60, 0.85, 0.30}, {0.95, 0.85, 0.30},
};
constexpr std::size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
// Consecutive scenes differ at least this much in background brightness (0..255); with the
// caption plate covering a fifth of the frame, a cut moves the mean frame difference well
// above the default threshold of 25.
constexpr double kMinLumaStep = 70.0;

enum class Pattern { solid, horizontal, vertical, checker, diagonal };
constexpr int kPatternCount = 5;

struct SceneLook {
  Rgb background;
  Pattern pattern;
  std::string lines[2];
};

using workloads::check_cairo;

// Low-contrast texture in the background's own hue, so the scene's brightness stays that of
// its background while the frames still have structure.
void draw_background(cairo_t* cr, const SceneLook& look, int width, int height) {
  const Rgb& c = look.background;
  cairo_set_source_rgb(cr, c.r, c.g, c.b);
  cairo_paint(cr);
  const double shift = c.luma() > 128 ? -0.12 : 0.12;
  cairo_set_source_rgb(cr, std::clamp(c.r + shift, 0.0, 1.0), std::clamp(c.g + shift, 0.0, 1.0),
                       std::clamp(c.b + shift, 0.0, 1.0));
  constexpr int kStep = 20;
  switch (look.pattern) {
    case Pattern::solid:
      return;
    case Pattern::horizontal:
      for (int y = 0; y < height; y += 2 * kStep) cairo_rectangle(cr, 0, y, width, kStep);
      break;
    case Pattern::vertical:
      for (int x = 0; x < width; x += 2 * kStep) cairo_rectangle(cr, x, 0, kStep, height);
      break;
    case Pattern::checker:
      for (int y = 0; y < height; y += kStep) {
        for (int x = ((y / kStep) % 2) * kStep; x < width; x += 2 * kStep) {
          cairo_rectangle(cr, x, y, kStep, kStep);
        }
      }
      break;
    case Pattern::diagonal:
      cairo_set_line_width(cr, kStep / 2.0);
      for (int x = -height; x < width; x += 2 * kStep) {
        cairo_move_to(cr, x, 0);
        cairo_line_to(cr, x + height, height);
      }
      cairo_stroke(cr);
      return;
  }
  cairo_fill(cr);
}

// A caption plate in the middle: dark text on light, as subtitles are burned in for
// legibility.
void draw_caption(cairo_t* cr, const SceneLook& look, int width, int height) {
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
  const double size = std::max(10.0, height / 8.0);
  cairo_set_font_size(cr, size);
  cairo_text_extents_t ext[2];
  double text_width = 0;
  for (int i = 0; i < 2; ++i) {
    cairo_text_extents(cr, look.lines[i].c_str(), &ext[i]);
    text_width = std::max(text_width, ext[i].x_advance);
  }
  const double line_height = size * 1.35;
  const double plate_w = std::min(width - 8.0, text_width + size * 1.2);
  const double plate_h = 2 * line_height + size * 0.5;
  const double x0 = (width - plate_w) / 2, y0 = (height - plate_h) / 2;
  cairo_set_source_rgb(cr, 0.97, 0.97, 0.97);
  cairo_rectangle(cr, x0, y0, plate_w, plate_h);
  cairo_fill(cr);
  cairo_set_source_rgb(cr, 0.05, 0.05, 0.05);
  for (int i = 0; i < 2; ++i) {
    cairo_move_to(cr, (width - ext[i].x_advance) / 2, y0 + size * 0.25 + line_height * (i + 0.8));
    cairo_show_text(cr, look.lines[i].c_str());
  }
}

// A small square that moves every frame, so consecutive frames of a scene differ a little
// (as real footage does) and every frame is distinguishable.
void draw_marker(cairo_t* cr, const SceneLook& look, int frame_in_scene, int width, int height) {
  const double side = std::max(4.0, height / 14.0);
  const double travel = width - 2 * side;
  const double x = side / 2 + std::fmod(frame_in_scene * side * 0.75, travel);
  const double v = look.background.luma() > 128 ? 0.0 : 1.0;
  cairo_set_source_rgb(cr, v, v, v);
  cairo_rectangle(cr, x, height - 1.5 * side, side, side);
  cairo_fill(cr);
}

std::vector<SceneLook> choose_looks(int video, int scenes, Rng& rng) {
  std::vector<SceneLook> looks;
  std::size_t previous = kPaletteSize;
  for (int s = 0; s < scenes; ++s) {
    std::size_t c = 0;
    do {
      c = rng.below(kPaletteSize);
    } while (previous < kPaletteSize &&
             std::abs(kPalette[c].luma() - kPalette[previous].luma()) < kMinLumaStep);
    previous = c;
    SceneLook look;
    look.background = kPalette[c];
    look.pattern = static_cast<Pattern>(rng.below(kPatternCount));
    look.lines[0] = fmt::format("Video {} Scene {}", video, s + 1);
    look.lines[1] = kWords[rng.below(kWordCount)];
    looks.push_back(std::move(look));
  }
  return looks;
}

ExpectedVideo write_video(const fs::path& path, int index, int scenes, const CorpusOptions& o,
                          Rng& rng) {
  ExpectedVideo v;
  v.video = path.stem().string();
  v.file = path.filename().string();
  v.fps = o.fps;
  v.width = o.width;
  v.height = o.height;
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> surface(
      cairo_image_surface_create(CAIRO_FORMAT_ARGB32, o.width, o.height), cairo_surface_destroy);
  check_cairo(cairo_surface_status(surface.get()), "cannot create a drawing surface");
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> cr(cairo_create(surface.get()), cairo_destroy);
  VideoWriter writer(
      path.string(),
      EncoderOptions{.width = o.width, .height = o.height, .fps = o.fps, .gop = o.gop});
  for (const SceneLook& look : choose_looks(index, scenes, rng)) {
    const int frames = rng.between(o.min_scene_frames, o.max_scene_frames);
    ExpectedScene scene;
    scene.first_frame = static_cast<std::uint64_t>(writer.frames());
    scene.last_frame = scene.first_frame + static_cast<std::uint64_t>(frames) - 1;
    scene.text = look.lines[0] + " " + look.lines[1];
    for (int f = 0; f < frames; ++f) {
      draw_background(cr.get(), look, o.width, o.height);
      draw_caption(cr.get(), look, o.width, o.height);
      draw_marker(cr.get(), look, f, o.width, o.height);
      check_cairo(cairo_status(cr.get()), "cannot draw a frame of " + path.string());
      cairo_surface_flush(surface.get());
      writer.write_bgra(cairo_image_surface_get_data(surface.get()),
                        cairo_image_surface_get_stride(surface.get()));
    }
    v.scenes.push_back(std::move(scene));
  }
  writer.finish();
  v.frames = static_cast<std::uint64_t>(writer.frames());
  return v;
}

void write_text(const fs::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
}

nlohmann::json to_json(const ExpectedVideo& v) {
  nlohmann::json scenes = nlohmann::json::array();
  for (const ExpectedScene& s : v.scenes) {
    scenes.push_back(
        {{"first_frame", s.first_frame}, {"last_frame", s.last_frame}, {"text", s.text}});
  }
  return {{"video", v.video},
          {"file", v.file},
          {"fps", v.fps},
          {"width", v.width},
          {"height", v.height},
          {"frames", v.frames},
          {"scene_count", v.scenes.size()},
          {"scenes", scenes}};
}

}  // namespace

std::size_t VideoCorpus::total_scenes() const {
  std::size_t n = 0;
  for (const auto& v : videos) n += v.scenes.size();
  return n;
}

std::size_t VideoCorpus::total_frames() const {
  std::size_t n = 0;
  for (const auto& v : videos) n += v.frames;
  return n;
}

std::vector<int> sample_scene_counts(const CorpusOptions& options) {
  // P(scenes >= k) = k^-0.9.
  return workloads::pareto_counts(options.seed ^ 0x7363656e65ULL, options.videos, 0.9,
                                  options.max_scenes);
}

VideoCorpus make_videos(const std::string& dir, const CorpusOptions& o) {
  if (o.videos < 0 || o.corrupt < 0 || o.max_scenes < 1 || o.min_scene_frames < 1 ||
      o.max_scene_frames < o.min_scene_frames) {
    throw std::invalid_argument(
        "make_videos: videos and corrupt must be >= 0, max_scenes >= 1 and "
        "1 <= min_scene_frames <= max_scene_frames");
  }
  const fs::path root(dir);
  fs::create_directories(root);
  VideoCorpus corpus;
  corpus.dir = dir;
  const std::vector<int> counts = sample_scene_counts(o);
  Rng rng(o.seed);
  std::string expected;
  for (int i = 0; i < o.videos; ++i) {
    ExpectedVideo v = write_video(root / fmt::format("v-{:03}.mp4", i), i, counts[i], o, rng);
    expected += to_json(v).dump() + "\n";
    corpus.videos.push_back(std::move(v));
  }
  for (int i = 0; i < o.corrupt; ++i) {
    // An MP4 file-type box followed by noise: an MP4 by name and magic, a video of nothing.
    std::string bytes(
        "\x00\x00\x00\x18"
        "ftypisom\x00\x00\x02\x00"
        "isommp41",
        24);
    for (int k = 0; k < 4096; ++k) bytes.push_back(static_cast<char>(rng.next() & 0xff));
    const std::string stem = o.corrupt == 1 ? "corrupt" : fmt::format("corrupt-{:02}", i);
    write_text(root / (stem + ".mp4"), bytes);
    expected +=
        nlohmann::json{{"video", stem}, {"file", stem + ".mp4"}, {"corrupt", true}}.dump() + "\n";
    corpus.corrupt.push_back(stem);
  }
  write_text(root / "expected.jsonl", expected);
  return corpus;
}

VideoCorpus load_corpus(const std::string& dir) {
  const fs::path path = fs::path(dir) / "expected.jsonl";
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", path.string()));
  VideoCorpus corpus;
  corpus.dir = dir;
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j.value("corrupt", false)) {
        corpus.corrupt.push_back(j.at("video").get<std::string>());
        continue;
      }
      ExpectedVideo v;
      v.video = j.at("video").get<std::string>();
      v.file = j.at("file").get<std::string>();
      v.fps = j.value("fps", 0);
      v.width = j.value("width", 0);
      v.height = j.value("height", 0);
      v.frames = j.at("frames").get<std::uint64_t>();
      for (const nlohmann::json& s : j.at("scenes")) {
        v.scenes.push_back(ExpectedScene{s.at("first_frame").get<std::uint64_t>(),
                                         s.at("last_frame").get<std::uint64_t>(),
                                         s.at("text").get<std::string>()});
      }
      corpus.videos.push_back(std::move(v));
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("{}:{}: {}", path.string(), number, e.what()));
    }
  }
  return corpus;
}

}  // namespace video
