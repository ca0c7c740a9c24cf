// JSON Lines records. See record_json.h.
#include "video/record_json.h"

#include <cmath>
#include <stdexcept>

#include "video/analysis.h"
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace video {
namespace {

// Microseconds are finer than any frame time; more digits only show binary rounding noise.
double rounded(double seconds) {
  return std::round(seconds * 1e6) / 1e6;
}

}  // namespace

std::string to_json_line(const VideoRecord& r) {
  nlohmann::json scenes = nlohmann::json::array();
  for (const SceneRecord& s : r.scenes) {
    nlohmann::json frames = nlohmann::json::array();
    for (const SceneFrame& f : s.frames) {
      nlohmann::json jf = {{"frame", f.frame},
                           {"seconds", rounded(f.seconds)},
                           {"text", f.text},
                           {"signature", signature_hex(f.signature)},
                           {"near_duplicate", f.near_duplicate}};
      if (f.near_duplicate) jf["duplicate_of"] = f.duplicate_of;
      frames.push_back(std::move(jf));
    }
    scenes.push_back({{"index", s.index},
                      {"first_frame", s.first_frame},
                      {"last_frame", s.last_frame},
                      {"start_seconds", rounded(s.start_seconds)},
                      {"end_seconds", rounded(s.end_seconds)},
                      {"cut_score", std::round(s.cut_score * 1000) / 1000},
                      {"text", s.text},
                      {"signature", signature_hex(s.signature)},
                      {"near_duplicates", s.near_duplicates},
                      {"frames", std::move(frames)}});
  }
  const nlohmann::json j = {{"video", r.info.stem},
                            {"path", r.info.path},
                            {"codec", r.info.codec},
                            {"duration_seconds", rounded(r.info.duration_seconds)},
                            {"fps", r.info.fps},
                            {"width", r.info.width},
                            {"height", r.info.height},
                            {"frames", r.frames},
                            {"scene_count", r.scenes.size()},
                            {"scenes", std::move(scenes)}};
  // Replacing invalid UTF-8 keeps one odd OCR byte from failing the whole record.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

VideoRecord parse_json_line(std::string_view line) {
  VideoRecord r;
  try {
    const nlohmann::json j = nlohmann::json::parse(line);
    r.info.stem = j.at("video").get<std::string>();
    r.info.path = j.value("path", std::string());
    r.info.codec = j.value("codec", std::string());
    r.info.duration_seconds = j.value("duration_seconds", 0.0);
    r.info.fps = j.value("fps", 0.0);
    r.info.width = j.value("width", 0u);
    r.info.height = j.value("height", 0u);
    r.frames = j.value("frames", std::uint64_t{0});
    for (const nlohmann::json& js : j.at("scenes")) {
      SceneRecord s;
      s.index = js.at("index").get<std::uint32_t>();
      s.first_frame = js.at("first_frame").get<std::uint64_t>();
      s.last_frame = js.at("last_frame").get<std::uint64_t>();
      s.start_seconds = js.value("start_seconds", 0.0);
      s.end_seconds = js.value("end_seconds", 0.0);
      s.cut_score = js.value("cut_score", 0.0);
      s.text = js.value("text", std::string());
      s.signature = parse_signature(js.at("signature").get<std::string>());
      s.near_duplicates = js.value("near_duplicates", std::size_t{0});
      for (const nlohmann::json& jf : js.at("frames")) {
        SceneFrame f;
        f.frame = jf.at("frame").get<std::uint64_t>();
        f.seconds = jf.value("seconds", 0.0);
        f.text = jf.value("text", std::string());
        f.signature = parse_signature(jf.at("signature").get<std::string>());
        f.near_duplicate = jf.value("near_duplicate", false);
        f.duplicate_of = jf.value("duplicate_of", std::int64_t{-1});
        s.frames.push_back(std::move(f));
      }
      r.scenes.push_back(std::move(s));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("not a video record: {}", e.what()));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("not a video record: {}", e.what()));
  }
  return r;
}

}  // namespace video
