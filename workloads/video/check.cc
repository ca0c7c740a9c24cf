// Output scoring. See check.h.
#include "video/check.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include "common/text.h"
#include "video/output.h"
#include "video/record_json.h"
#include <nlohmann/json.hpp>

#include <rayorch/sink_reader.h>

namespace video {
namespace fs = std::filesystem;

namespace {

using workloads::word_distance;
using workloads::words_of;

// Edits between two texts, capped at the expected word count so one garbled caption cannot
// outweigh the others.
std::size_t capped_errors(std::string_view expected, std::string_view actual) {
  const auto e = words_of(expected);
  return std::min(word_distance(e, words_of(actual)), e.size());
}

}  // namespace

double word_accuracy(std::string_view expected, std::string_view actual) {
  const auto e = words_of(expected);
  if (e.empty()) return words_of(actual).empty() ? 1.0 : 0.0;
  const double d = static_cast<double>(word_distance(e, words_of(actual)));
  return std::max(0.0, 1.0 - d / static_cast<double>(e.size()));
}

CorpusCheck check_outputs(const VideoCorpus& corpus, const std::string& out_dir) {
  CorpusCheck check;
  std::map<std::string, VideoRecord> records;
  for (const std::string& line : rayorch::read_committed_lines(out_dir)) {
    if (line.empty()) continue;
    try {
      VideoRecord r = parse_json_line(line);
      std::string name = r.info.stem;
      records.emplace(std::move(name), std::move(r));
    } catch (const std::runtime_error&) {
      ++check.torn_lines;
    }
  }
  std::size_t words = 0, errors = 0, count_ok = 0, ranges_ok = 0;
  for (const ExpectedVideo& v : corpus.videos) {
    VideoCheck c;
    c.video = v.video;
    c.expected_scenes = v.scenes.size();
    std::string expected_all;
    for (const ExpectedScene& s : v.scenes) {
      c.words += words_of(s.text).size();
      expected_all += s.text + " ";
    }
    c.word_errors = c.words;
    const auto it = records.find(v.video);
    if (it != records.end()) {
      const VideoRecord& r = it->second;
      c.present = true;
      c.actual_scenes = r.scenes.size();
      c.scene_count_ok = c.actual_scenes == c.expected_scenes;
      c.ranges_ok = c.scene_count_ok;
      if (c.scene_count_ok) {
        c.word_errors = 0;
        for (std::size_t i = 0; i < r.scenes.size(); ++i) {
          c.ranges_ok = c.ranges_ok && r.scenes[i].first_frame == v.scenes[i].first_frame &&
                        r.scenes[i].last_frame == v.scenes[i].last_frame;
          c.word_errors += capped_errors(v.scenes[i].text, r.scenes[i].text);
        }
      } else {
        std::string actual_all;
        for (const SceneRecord& s : r.scenes) actual_all += s.text + " ";
        c.word_errors = capped_errors(expected_all, actual_all);
      }
    }
    c.accuracy = c.words == 0
                     ? 1.0
                     : 1.0 - static_cast<double>(c.word_errors) / static_cast<double>(c.words);
    words += c.words;
    errors += c.word_errors;
    count_ok += c.scene_count_ok ? 1 : 0;
    ranges_ok += c.ranges_ok ? 1 : 0;
    check.videos.push_back(std::move(c));
    records.erase(v.video);
  }
  for (const auto& [name, r] : records) check.unexpected.push_back(name);
  const double n = static_cast<double>(corpus.videos.size());
  check.scene_count_match_rate = corpus.videos.empty() ? 1.0 : static_cast<double>(count_ok) / n;
  check.range_match_rate = corpus.videos.empty() ? 1.0 : static_cast<double>(ranges_ok) / n;
  check.accuracy =
      words == 0 ? 1.0 : 1.0 - static_cast<double>(errors) / static_cast<double>(words);

  const fs::path failures = fs::path(out_dir) / "failures.jsonl";
  for (const std::string& line : read_complete_lines(failures.string())) {
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("video") && j["video"].is_string()) {
      check.failed_listed.push_back(j["video"].get<std::string>());
    } else {
      ++check.torn_lines;
    }
  }
  std::sort(check.failed_listed.begin(), check.failed_listed.end());
  return check;
}

}  // namespace video
