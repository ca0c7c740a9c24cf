// Footage output scoring. See footage_check.h.
#include "video/footage_check.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "common/text.h"
#include "video/output.h"
#include "video/record_json.h"
#include "video/video.h"

#include <rayorch/sink_reader.h>

namespace video {
namespace fs = std::filesystem;

namespace {

std::set<std::string> document_words(const std::string& text) {
  std::set<std::string> out;
  for (std::string& w : workloads::words_of(text)) {
    const bool letters =
        std::all_of(w.begin(), w.end(), [](unsigned char c) { return std::isalpha(c) != 0; });
    if (letters && w.size() >= 3) out.insert(std::move(w));
  }
  return out;
}

double ratio(std::size_t part, std::size_t whole) {
  return whole == 0 ? 1.0 : static_cast<double>(part) / static_cast<double>(whole);
}

void score_cuts(const FootageVideo& v, const VideoRecord& r, FootageVideoCheck& c) {
  std::vector<bool> matched(v.cuts.size(), false);
  for (std::size_t s = 1; s < r.scenes.size(); ++s) {
    const std::uint64_t cut = r.scenes[s].first_frame;
    ++c.detected_cuts;
    bool found = false;
    for (std::size_t t = 0; t < v.cuts.size() && !found; ++t) {
      if (matched[t] || cut + 1 < v.cuts[t].first || cut > v.cuts[t].last + 1) continue;
      matched[t] = true;
      found = true;
      ++c.matched_cuts;
    }
    if (found) continue;
    for (const FootageMotion& m : v.motion) {
      if (cut >= m.first_frame && cut <= m.last_frame) {
        ++c.cuts_in_motion;
        break;
      }
    }
  }
}

void score_text(const FootageVideo& v, const VideoRecord& r, FootageVideoCheck& c) {
  for (const SceneRecord& scene : r.scenes) {
    for (const SceneFrame& f : scene.frames) {
      for (const FootageSlide& slide : v.slides) {
        if (f.frame < slide.first_frame || f.frame > slide.last_frame) continue;
        const std::set<std::string> expected = document_words(slide.text);
        const std::vector<std::string> read = workloads::words_of(f.text);
        const std::set<std::string> seen(read.begin(), read.end());
        ++c.scored_frames;
        c.slide_words += expected.size();
        for (const std::string& w : expected) c.words_found += seen.count(w);
        break;
      }
    }
  }
}

}  // namespace

FootageCheck check_footage(const FootageCorpus& corpus, const std::string& out_dir) {
  std::map<std::string, VideoRecord> records;
  for (const std::string& line : rayorch::read_committed_lines(out_dir)) {
    if (line.empty()) continue;
    try {
      VideoRecord r = parse_json_line(line);
      std::string name = r.info.stem;
      records.emplace(std::move(name), std::move(r));
    } catch (const std::runtime_error&) {
      // A torn last line: the video counts as missing.
    }
  }
  FootageCheck check;
  std::size_t expected = 0, detected = 0, matched = 0, words = 0, found = 0;
  for (const FootageVideo& v : corpus.videos) {
    FootageVideoCheck c;
    c.video = v.video;
    c.expected_cuts = v.cuts.size();
    const auto it = records.find(v.video);
    if (it != records.end()) {
      c.present = true;
      score_cuts(v, it->second, c);
      score_text(v, it->second, c);
    }
    expected += c.expected_cuts;
    detected += c.detected_cuts;
    matched += c.matched_cuts;
    words += c.slide_words;
    found += c.words_found;
    check.cuts_in_motion += c.cuts_in_motion;
    check.videos.push_back(std::move(c));
  }
  check.precision = ratio(matched, detected);
  check.recall = ratio(matched, expected);
  check.text_recall = ratio(found, words);
  return check;
}

}  // namespace video
