// The content score and the adaptive, transition-aware cut detector. See cuts.h.
#include "video/cuts.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace video {
namespace {

// Gradient magnitude (|dx| + |dy| of central differences, 0..1020) that makes a pixel an
// edge: text strokes and object outlines pass, compression and sensor noise do not.
constexpr int kEdgeGradient = 48;
// Scores below this never start a run of changing frames: what compression alone produces.
constexpr double kChangeFloor = 0.5;
// A frame is changing when its score is this many times the quiet level (the median score of
// the unchanging frames before it: noise and compression).
constexpr double kChangeOverQuiet = 2.0;
// A fade's middle frame has at most this share of the contrast of the frames around it.
constexpr double kFadeFlatness = 0.25;
// Frames before a run that the gradual-transition test may take as the picture before it.
constexpr std::uint64_t kLookBack = 4;
// Side of the pixel blocks the blend test compares.
constexpr int kBlendBlock = 4;
// Unchanging frames whose median score is the quiet level a frame is judged against, and how
// many of them are needed before it is used.
constexpr std::size_t kQuietFrames = 16;
constexpr std::size_t kMinQuietFrames = 4;
// Pixels of the analysis frame a pan, scroll or shake may move between frames and still be
// recognised as motion by the shifted distance.
constexpr int kReach = 3;
// Least shifted value distance of a cut found next to motion: two unrelated pictures differ
// by more than this wherever they are placed.
constexpr double kMinShiftedCut = 3.0;

void to_hsv(std::uint8_t r, std::uint8_t g, std::uint8_t b, std::uint8_t& h, std::uint8_t& s,
            std::uint8_t& v) {
  const int mx = std::max({r, g, b}), mn = std::min({r, g, b});
  v = static_cast<std::uint8_t>(mx);
  const int delta = mx - mn;
  s = static_cast<std::uint8_t>(mx == 0 ? 0 : 255 * delta / mx);
  if (delta == 0) {
    h = 0;
    return;
  }
  // Hue on a full byte circle: six sectors of 256/6.
  int sector = 0;
  if (mx == r) {
    sector = 43 * (g - b) / delta;
  } else if (mx == g) {
    sector = 85 + 43 * (b - r) / delta;
  } else {
    sector = 171 + 43 * (r - g) / delta;
  }
  h = static_cast<std::uint8_t>((sector + 256) % 256);
}

}  // namespace

ContentFrame ContentFrame::from_rgb(int width, int height, std::vector<std::uint8_t> rgb) {
  const auto n = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
  if (width <= 0 || height <= 0 || rgb.size() != 3 * n) {
    throw std::invalid_argument(
        fmt::format("ContentFrame: {} bytes are no {}x{} RGB image", rgb.size(), width, height));
  }
  ContentFrame f;
  f.width = width;
  f.height = height;
  f.hue.resize(n);
  f.saturation.resize(n);
  f.value.resize(n);
  double sum = 0, sum_sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    to_hsv(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2], f.hue[i], f.saturation[i], f.value[i]);
    sum += f.value[i];
    sum_sq += static_cast<double>(f.value[i]) * f.value[i];
  }
  const double mean = sum / static_cast<double>(n);
  f.value_mean = mean;
  f.value_deviation = std::sqrt(std::max(0.0, sum_sq / static_cast<double>(n) - mean * mean));

  std::vector<std::uint8_t> raw(n, 0);
  for (int y = 1; y + 1 < height; ++y) {
    for (int x = 1; x + 1 < width; ++x) {
      const std::size_t i = static_cast<std::size_t>(y) * width + x;
      const int dx = std::abs(f.value[i + 1] - f.value[i - 1]);
      const int dy = std::abs(f.value[i + width] - f.value[i - width]);
      raw[i] = dx + dy >= kEdgeGradient ? 1 : 0;
    }
  }
  // Dilation by one pixel: an edge that moved by a pixel (shake, slow motion) still overlaps.
  // Separable: the maximum over each row's neighbours, then over each column's.
  std::vector<std::uint8_t> across(n, 0);
  for (int y = 0; y < height; ++y) {
    const std::size_t row = static_cast<std::size_t>(y) * width;
    for (int x = 0; x < width; ++x) {
      const int lo = std::max(0, x - 1), hi = std::min(width - 1, x + 1);
      across[row + x] = static_cast<std::uint8_t>(raw[row + lo] | raw[row + x] | raw[row + hi]);
    }
  }
  f.edges.assign(n, 0);
  for (int y = 0; y < height; ++y) {
    const std::size_t up = static_cast<std::size_t>(std::max(0, y - 1)) * width;
    const std::size_t row = static_cast<std::size_t>(y) * width;
    const std::size_t down = static_cast<std::size_t>(std::min(height - 1, y + 1)) * width;
    for (int x = 0; x < width; ++x) {
      f.edges[row + x] = (across[up + x] | across[row + x] | across[down + x]) != 0 ? 255 : 0;
    }
  }
  f.rgb = std::move(rgb);
  return f;
}

double content_score(const ContentFrame& a, const ContentFrame& b) {
  if (a.width != b.width || a.height != b.height) {
    throw std::invalid_argument(fmt::format("content_score: frames of {}x{} and {}x{}", a.width,
                                            a.height, b.width, b.height));
  }
  const std::size_t n = a.value.size();
  if (n == 0) return 0.0;
  std::uint64_t hue = 0, sat = 0, val = 0, edge = 0;
  for (std::size_t i = 0; i < n; ++i) {
    int dh = std::abs(a.hue[i] - b.hue[i]);
    dh = std::min(dh, 256 - dh) * 2;  // 0..256 around the circle
    // Hue means nothing on gray pixels, where it is noise: weight it by the saturation.
    hue += static_cast<std::uint64_t>(dh * std::min(a.saturation[i], b.saturation[i]) / 255);
    sat += static_cast<std::uint64_t>(std::abs(a.saturation[i] - b.saturation[i]));
    val += static_cast<std::uint64_t>(std::abs(a.value[i] - b.value[i]));
    edge += a.edges[i] != b.edges[i] ? 255u : 0u;
  }
  return static_cast<double>(hue + sat + val + edge) / (4.0 * static_cast<double>(n));
}

double shifted_value_distance(const ContentFrame& a, const ContentFrame& b, int reach) {
  if (a.width != b.width || a.height != b.height) {
    throw std::invalid_argument("shifted_value_distance: frames of different sizes");
  }
  const int w = a.width, h = a.height;
  if (w <= 2 * reach || h <= 2 * reach) return 0.0;
  double best = 255.0;
  for (int dy = -reach; dy <= reach; ++dy) {
    for (int dx = -reach; dx <= reach; ++dx) {
      std::uint64_t sum = 0, n = 0;
      for (int y = reach; y < h - reach; y += 2) {
        const std::uint8_t* ra = a.value.data() + static_cast<std::size_t>(y) * w;
        const std::uint8_t* rb = b.value.data() + static_cast<std::size_t>(y + dy) * w + dx;
        for (int x = reach; x < w - reach; x += 2) {
          sum += static_cast<std::uint64_t>(std::abs(ra[x] - rb[x]));
          ++n;
        }
      }
      best = std::min(best, static_cast<double>(sum) / static_cast<double>(n));
    }
  }
  return best;
}

double blend_residual(const ContentFrame& a, const ContentFrame& b, const ContentFrame& middle,
                      double& t) {
  if (a.width != b.width || a.height != b.height || a.width != middle.width ||
      a.height != middle.height) {
    throw std::invalid_argument("blend_residual: frames of different sizes");
  }
  // Compared in blocks of kBlendBlock x kBlendBlock pixels: a blend is a blend at any scale,
  // while sensor noise and a sub-pixel shake average away.
  const int bw = a.width / kBlendBlock, bh = a.height / kBlendBlock;
  if (bw == 0 || bh == 0) return 1.0;
  std::vector<double> d, m;
  d.reserve(3 * static_cast<std::size_t>(bw) * bh);
  m.reserve(d.capacity());
  for (int by = 0; by < bh; ++by) {
    for (int bx = 0; bx < bw; ++bx) {
      for (int k = 0; k < 3; ++k) {
        double sa = 0, sb = 0, sm = 0;
        for (int y = by * kBlendBlock; y < (by + 1) * kBlendBlock; ++y) {
          for (int x = bx * kBlendBlock; x < (bx + 1) * kBlendBlock; ++x) {
            const std::size_t i = 3 * (static_cast<std::size_t>(y) * a.width + x) + k;
            sa += a.rgb[i];
            sb += b.rgb[i];
            sm += middle.rgb[i];
          }
        }
        d.push_back(sb - sa);
        m.push_back(sm - sa);
      }
    }
  }
  double dot = 0, norm = 0, spread = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    dot += m[i] * d[i];
    norm += d[i] * d[i];
    spread += std::abs(d[i]);
  }
  if (spread == 0) {
    t = 0;
    return 1.0;
  }
  t = std::clamp(dot / norm, 0.0, 1.0);
  double residual = 0;
  for (std::size_t i = 0; i < d.size(); ++i) residual += std::abs(m[i] - t * d[i]);
  return residual / spread;
}

CutDetector::CutDetector(CutOptions options) : options_(options) {
  if (!(options_.adaptive_ratio > 1) || !(options_.min_score > 0) || options_.window < 1 ||
      options_.min_scene_frames < 1 || options_.max_transition_frames < 2 ||
      !(options_.blend_tolerance > 0)) {
    throw std::invalid_argument(fmt::format(
        "CutDetector: need adaptive ratio > 1 ({}), min score > 0 ({}), window >= 1 ({}), "
        "min scene frames >= 1 ({}), max transition frames >= 2 ({}), blend tolerance > 0 ({})",
        options_.adaptive_ratio, options_.min_score, options_.window, options_.min_scene_frames,
        options_.max_transition_frames, options_.blend_tolerance));
  }
}

const ContentFrame& CutDetector::held(std::uint64_t index) const {
  const std::uint64_t first = frames_.front().index;
  return frames_.at(static_cast<std::size_t>(index - first)).frame;
}

void CutDetector::push(ContentFrame frame) {
  const auto i = static_cast<std::uint64_t>(scores_.size());
  scores_.push_back(frames_.empty() ? 0.0 : content_score(frames_.back().frame, frame));
  shifted_.push_back(frames_.empty() ? 0.0
                                     : shifted_value_distance(frames_.back().frame, frame, kReach));
  frames_.push_back(Held{i, std::move(frame)});
  const auto window = static_cast<std::uint64_t>(options_.window);
  while (decided_ + window <= i) decide(decided_++);
  // Keep the frame before the next undecided one (a run's first frame would follow it) and,
  // during a run that may still be a transition, everything since the frame before it.
  std::uint64_t keep = decided_ - 1;
  if (in_run_ && !run_is_motion_) keep = std::min(keep, run_start_ - 1);
  keep = keep > kLookBack ? keep - kLookBack : 0;
  while (frames_.front().index < keep) frames_.pop_front();
}

bool CutDetector::spike(std::uint64_t j) const {
  if (scores_[j] < options_.min_score) return false;
  const auto w = static_cast<std::uint64_t>(options_.window);
  auto stands_out = [&](const std::vector<double>& scores) {
    double sum = 0;
    int count = 0;
    for (std::uint64_t k = j > w ? j - w : 1; k <= j + w && k < scores.size(); ++k) {
      if (k == j) continue;
      sum += scores[k];
      ++count;
    }
    return scores[j] >= options_.adaptive_ratio * (count == 0 ? 0.0 : sum / count);
  };
  // Next to motion every score is high; with the motion shifted away, a cut still stands out.
  return stands_out(scores_) || (shifted_[j] >= kMinShiftedCut && stands_out(shifted_));
}

double CutDetector::quiet(std::uint64_t j) const {
  // The scores of the latest frames that were neither cuts nor changing; until there are a
  // few, those of the latest frames whatever they were (noise from the first frame on).
  std::vector<double> recent(quiet_scores_.begin(), quiet_scores_.end());
  if (recent.size() < kMinQuietFrames) {
    const std::uint64_t from = j > kQuietFrames ? j - kQuietFrames : 1;
    if (from >= j) return 0.0;
    recent.assign(scores_.begin() + static_cast<std::ptrdiff_t>(from),
                  scores_.begin() + static_cast<std::ptrdiff_t>(j));
  }
  const auto middle = recent.begin() + static_cast<std::ptrdiff_t>(recent.size() / 2);
  std::nth_element(recent.begin(), middle, recent.end());
  return *middle;
}

void CutDetector::decide(std::uint64_t j) {
  const double s = scores_[j];
  if (spike(j)) {
    in_run_ = false;  // what changed before the cut was not a transition of its own
    emit(Cut{j, s}, j - 1, j);
    return;
  }
  // A transition is judged against the level before it began; motion against the level now,
  // so that once motion is the norm its run ends.
  if (!in_run_ || run_is_motion_)
    run_threshold_ = std::max(kChangeFloor, kChangeOverQuiet * quiet(j));
  if (s >= run_threshold_) {
    if (!in_run_) {
      in_run_ = true;
      run_is_motion_ = false;
      run_start_ = j;
    }
    if (j - run_start_ + 1 > static_cast<std::uint64_t>(options_.max_transition_frames)) {
      run_is_motion_ = true;
    }
    return;
  }
  quiet_scores_.push_back(s);
  if (quiet_scores_.size() > kQuietFrames) quiet_scores_.pop_front();
  if (in_run_) {
    in_run_ = false;
    close_run(j);
  }
  if (pending_fade_ && !held(j).uniform()) pending_fade_ = false;
}

void CutDetector::close_run(std::uint64_t stable) {
  if (run_is_motion_) return;
  // The first frames of a slow dissolve under noise change too little to join the run: look
  // back a few frames, not into the last transition, so A is the old picture itself.
  std::uint64_t before = run_start_ - 1;
  const std::uint64_t floor = std::max(frames_.front().index, last_transition_end_);
  before = std::max(floor, before > kLookBack ? before - kLookBack : 0);
  const ContentFrame& a = held(before);
  const ContentFrame& b = held(stable);
  const double total = content_score(a, b);
  if (total < options_.min_score) return;  // it came back: a flash, a passing object
  // A dissolve: every frame inside is a blend of the frames around the run. The new scene
  // starts where the blend is mostly the new picture.
  auto blend_cut = [&](std::uint64_t from, std::uint64_t to, std::uint64_t& cut) {
    cut = to;
    bool found = false;
    for (std::uint64_t m = from + 1; m < to; ++m) {
      double t = 0;
      if (blend_residual(held(from), held(to), held(m), t) > options_.blend_tolerance) {
        return false;
      }
      if (!found && t >= 0.5) {
        cut = m;
        found = true;
      }
    }
    return true;
  };
  std::uint64_t cut = 0;
  if (blend_cut(before, stable, cut)) {
    emit(Cut{cut, total}, before, stable);
    return;
  }
  // A fade out and in: two blends through the most uniform frame, one cut after it.
  std::uint64_t darkest = run_start_;
  for (std::uint64_t m = run_start_; m < stable; ++m) {
    if (held(m).value_deviation < held(darkest).value_deviation) darkest = m;
  }
  std::uint64_t ignored = 0;
  // The frame a fade passes through is uniform, or at least far flatter than both ends when
  // the fade out and in meet without a black frame.
  const double flattest = held(darkest).value_deviation;
  const bool through = held(darkest).uniform() ||
                       flattest <= kFadeFlatness * std::min(a.value_deviation, b.value_deviation);
  if (through && blend_cut(before, darkest, ignored) && blend_cut(darkest, stable, ignored)) {
    emit(Cut{darkest + 1, total}, before, stable);
  }
  // Otherwise the run was motion: a short pan, a camera move, an object crossing.
}

void CutDetector::emit(Cut cut, std::uint64_t from, std::uint64_t to) {
  if (pending_fade_ && held(from).uniform() && !cuts_.empty()) {
    // Faded (or cut) to a uniform frame before, and only uniform frames since: one cut.
    cuts_.back() = Cut{from + 1, std::max(cuts_.back().score, cut.score)};
  } else {
    cuts_.push_back(cut);
  }
  pending_fade_ = held(to).uniform();
  last_transition_end_ = to;
}

std::vector<Cut> CutDetector::finish() {
  while (decided_ < scores_.size()) decide(decided_++);
  // A run still open at the end has no stable frame after it: nothing to compare with.
  in_run_ = false;
  return enforce_min_scene(cuts_, options_.min_scene_frames);
}

std::vector<Cut> enforce_min_scene(std::vector<Cut> cuts, int min_scene_frames) {
  std::vector<Cut> kept;
  std::uint64_t previous = 0;
  for (const Cut& c : cuts) {
    if (c.frame < previous + static_cast<std::uint64_t>(min_scene_frames)) continue;
    kept.push_back(c);
    previous = c.frame;
  }
  return kept;
}

}  // namespace video
