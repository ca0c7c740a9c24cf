// Frame differences, cuts, sampling, signatures and scene consensus. See analysis.h.
#include "video/analysis.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace video {

double mean_abs_difference(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
  if (a.size() != b.size()) {
    throw std::invalid_argument(
        fmt::format("mean_abs_difference: images of {} and {} pixels", a.size(), b.size()));
  }
  if (a.empty()) return 0.0;
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sum += static_cast<std::uint64_t>(std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i])));
  }
  return static_cast<double>(sum) / static_cast<double>(a.size());
}

std::vector<std::size_t> cut_frames(std::span<const double> differences, double threshold) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i < differences.size(); ++i) {
    if (differences[i] > threshold) cuts.push_back(i);
  }
  return cuts;
}

std::vector<std::uint64_t> sample_offsets(std::uint64_t frames, const SamplingConfig& config) {
  if ((config.every > 0) == (config.per_scene > 0) || config.every < 0 || config.per_scene < 0) {
    throw std::invalid_argument(fmt::format(
        "frame sampling: set exactly one of every ({}) and per_scene ({}) to a positive value",
        config.every, config.per_scene));
  }
  std::vector<std::uint64_t> out;
  if (frames == 0) return out;
  if (config.every > 0) {
    for (std::uint64_t f = 0; f < frames; f += static_cast<std::uint64_t>(config.every)) {
      out.push_back(f);
    }
    return out;
  }
  const auto k = static_cast<std::uint64_t>(config.per_scene);
  if (frames <= k) {
    for (std::uint64_t f = 0; f < frames; ++f) out.push_back(f);
  } else if (k == 1) {
    out.push_back((frames - 1) / 2);
  } else {
    // Both ends are included: the frames right after and right before a cut are the ones a
    // misplaced cut or an inexact seek would get wrong.
    for (std::uint64_t i = 0; i < k; ++i) out.push_back((i * (frames - 1) + (k - 1) / 2) / (k - 1));
  }
  return out;
}

std::uint64_t difference_hash(const FrameImage& image) {
  constexpr std::uint32_t kCols = 9, kRows = 8;
  const std::uint32_t w = image.width, h = image.height;
  if (w == 0 || h == 0 || image.pixels.size() != static_cast<std::size_t>(w) * h) {
    throw std::invalid_argument(
        fmt::format("difference_hash: frame {} has no {}x{} image", image.frame, w, h));
  }
  double cells[kRows][kCols];
  for (std::uint32_t cy = 0; cy < kRows; ++cy) {
    const std::uint32_t y0 = cy * h / kRows;
    const std::uint32_t y1 = std::max(y0 + 1, (cy + 1) * h / kRows);
    for (std::uint32_t cx = 0; cx < kCols; ++cx) {
      const std::uint32_t x0 = cx * w / kCols;
      const std::uint32_t x1 = std::max(x0 + 1, (cx + 1) * w / kCols);
      std::uint64_t sum = 0;
      for (std::uint32_t y = y0; y < std::min(y1, h); ++y) {
        const std::uint8_t* row = image.pixels.data() + static_cast<std::size_t>(y) * w;
        for (std::uint32_t x = x0; x < std::min(x1, w); ++x) sum += row[x];
      }
      const std::uint64_t n =
          static_cast<std::uint64_t>(std::min(y1, h) - y0) * (std::min(x1, w) - x0);
      cells[cy][cx] = static_cast<double>(sum) / static_cast<double>(n);
    }
  }
  std::uint64_t hash = 0;
  for (std::uint32_t cy = 0; cy < kRows; ++cy) {
    for (std::uint32_t cx = 0; cx + 1 < kCols; ++cx) {
      hash = (hash << 1) | (cells[cy][cx] > cells[cy][cx + 1] ? 1u : 0u);
    }
  }
  return hash;
}

int hamming_distance(std::uint64_t a, std::uint64_t b) {
  return std::popcount(a ^ b);
}

std::string clean_text(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      space = !out.empty();
    } else {
      if (space) out.push_back(' ');
      space = false;
      out.push_back(c);
    }
  }
  return out;
}

SceneRecord summarize_scene(const Scene& scene, const std::vector<FrameRef>& frames,
                            const std::vector<std::string>& texts,
                            const std::vector<std::uint64_t>& signatures, int near_duplicate_bits) {
  if (frames.size() != texts.size() || frames.size() != signatures.size()) {
    throw std::invalid_argument(fmt::format("scene {}: {} frames but {} texts and {} signatures",
                                            scene.index, frames.size(), texts.size(),
                                            signatures.size()));
  }
  SceneRecord r;
  r.index = scene.index;
  r.first_frame = scene.first_frame;
  r.last_frame = scene.last_frame;
  r.start_seconds = scene.start_seconds;
  r.end_seconds = scene.end_seconds;
  r.cut_score = scene.cut_score;

  std::map<std::string, std::size_t> votes;
  std::size_t best_votes = 0;
  for (const std::string& t : texts) {
    if (t.empty()) continue;
    const std::size_t v = ++votes[t];
    // Strictly more votes replaces the choice, so ties keep the earliest text.
    if (v > best_votes) {
      best_votes = v;
      r.text = t;
    }
  }

  std::uint64_t best_sum = UINT64_MAX;
  for (std::size_t i = 0; i < signatures.size(); ++i) {
    std::uint64_t sum = 0;
    for (std::size_t j = 0; j < signatures.size(); ++j) {
      sum += static_cast<std::uint64_t>(hamming_distance(signatures[i], signatures[j]));
    }
    if (sum < best_sum) {
      best_sum = sum;
      r.signature = signatures[i];
    }
  }

  std::vector<std::size_t> kept;  // frames that are not duplicates of an earlier one
  for (std::size_t i = 0; i < frames.size(); ++i) {
    SceneFrame f;
    f.frame = frames[i].frame;
    f.seconds = frames[i].seconds;
    f.text = texts[i];
    f.signature = signatures[i];
    for (std::size_t k : kept) {
      if (hamming_distance(signatures[k], signatures[i]) <= near_duplicate_bits) {
        f.near_duplicate = true;
        f.duplicate_of = static_cast<std::int64_t>(frames[k].frame);
        break;
      }
    }
    if (f.near_duplicate) {
      ++r.near_duplicates;
    } else {
      kept.push_back(i);
    }
    r.frames.push_back(std::move(f));
  }
  return r;
}

std::string signature_hex(std::uint64_t signature) {
  return fmt::format("0x{:016x}", signature);
}

std::uint64_t parse_signature(std::string_view hex) {
  if (hex.starts_with("0x")) hex.remove_prefix(2);
  std::uint64_t v = 0;
  const auto r = std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
  if (hex.empty() || r.ec != std::errc() || r.ptr != hex.data() + hex.size()) {
    throw std::invalid_argument(fmt::format("not a 64-bit hex signature: '{}'", hex));
  }
  return v;
}

}  // namespace video
