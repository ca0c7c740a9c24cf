// The content cut detector on synthetic frames: hard cuts, dissolves and fades found once
// each, motion and noise never cut, short scenes merged.
#include "video/cuts.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/sampling.h"
#include <gtest/gtest.h>

namespace {

constexpr int kWidth = 128, kHeight = 72;

// A picture with structure: coloured blocks of random brightness and thin dark lines, as
// large as `width` x `height` so a frame-sized window can pan over it.
struct Picture {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
};

Picture make_picture(std::uint64_t seed, int width = kWidth, int height = kHeight) {
  workloads::SampleRng rng(seed);
  Picture p{width, height, std::vector<std::uint8_t>(3 * static_cast<std::size_t>(width) * height)};
  const int block = 8;
  std::vector<std::uint8_t> colours(
      3 * static_cast<std::size_t>((width / block + 1) * (height / block + 1)));
  for (auto& c : colours) c = static_cast<std::uint8_t>(rng.below(256));
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const std::size_t b = static_cast<std::size_t>((y / block) * (width / block + 1) + x / block);
      const bool line = y % 11 == 0 || x % 13 == 0;
      for (int k = 0; k < 3; ++k) {
        p.rgb[3 * (static_cast<std::size_t>(y) * width + x) + k] = line ? 10 : colours[3 * b + k];
      }
    }
  }
  return p;
}

video::ContentFrame window(const Picture& p, int x0, int y0) {
  std::vector<std::uint8_t> rgb(3 * kWidth * kHeight);
  for (int y = 0; y < kHeight; ++y) {
    for (int x = 0; x < kWidth; ++x) {
      for (int k = 0; k < 3; ++k) {
        rgb[3 * (y * kWidth + x) + k] =
            p.rgb[3 * (static_cast<std::size_t>(y + y0) * p.width + (x + x0)) + k];
      }
    }
  }
  return video::ContentFrame::from_rgb(kWidth, kHeight, std::move(rgb));
}

video::ContentFrame blend(const Picture& a, const Picture& b, double t) {
  std::vector<std::uint8_t> rgb(a.rgb.size());
  for (std::size_t i = 0; i < rgb.size(); ++i) {
    rgb[i] = static_cast<std::uint8_t>(std::lround((1 - t) * a.rgb[i] + t * b.rgb[i]));
  }
  return video::ContentFrame::from_rgb(kWidth, kHeight, std::move(rgb));
}

Picture black() {
  return Picture{kWidth, kHeight, std::vector<std::uint8_t>(3 * kWidth * kHeight, 0)};
}

std::vector<std::uint64_t> frames_of(const std::vector<video::Cut>& cuts) {
  std::vector<std::uint64_t> out;
  for (const auto& c : cuts) out.push_back(c.frame);
  return out;
}

TEST(ContentScore, SeesStructureAndIgnoresIdentity) {
  const Picture a = make_picture(1), b = make_picture(2);
  EXPECT_EQ(video::content_score(window(a, 0, 0), window(a, 0, 0)), 0.0);
  EXPECT_GT(video::content_score(window(a, 0, 0), window(b, 0, 0)), 20.0);
  double t = 0;
  EXPECT_LT(video::blend_residual(window(a, 0, 0), window(b, 0, 0), blend(a, b, 0.3), t), 0.02);
  EXPECT_NEAR(t, 0.3, 0.02);
}

TEST(CutDetector, HardCutsAreFoundAtTheirFrame) {
  video::CutDetector d({});
  const Picture a = make_picture(1), b = make_picture(2), c = make_picture(3);
  for (int i = 0; i < 10; ++i) d.push(window(a, 0, 0));
  for (int i = 0; i < 10; ++i) d.push(window(b, 0, 0));
  for (int i = 0; i < 10; ++i) d.push(window(c, 0, 0));
  EXPECT_EQ(frames_of(d.finish()), (std::vector<std::uint64_t>{10, 20}));
}

TEST(CutDetector, ADissolveIsOneCutInsideIt) {
  video::CutDetector d({});
  const Picture a = make_picture(1), b = make_picture(2);
  for (int i = 0; i < 10; ++i) d.push(window(a, 0, 0));
  for (int i = 1; i <= 8; ++i) d.push(blend(a, b, i / 9.0));  // frames 10..17
  for (int i = 0; i < 10; ++i) d.push(window(b, 0, 0));
  const auto cuts = frames_of(d.finish());
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_GE(cuts[0], 10u);
  EXPECT_LE(cuts[0], 18u);
}

TEST(CutDetector, AFadeThroughBlackIsOneCut) {
  for (int held : {0, 1, 2}) {
    SCOPED_TRACE(held);
    video::CutDetector d({});
    const Picture a = make_picture(1), b = make_picture(2), k = black();
    for (int i = 0; i < 10; ++i) d.push(window(a, 0, 0));
    for (int i = 1; i <= 6; ++i) d.push(blend(a, k, i / 7.0));
    for (int i = 0; i < held; ++i) d.push(window(k, 0, 0));
    for (int i = 1; i <= 6; ++i) d.push(blend(k, b, i / 7.0));
    for (int i = 0; i < 10; ++i) d.push(window(b, 0, 0));
    const auto cuts = frames_of(d.finish());
    ASSERT_EQ(cuts.size(), 1u) << ::testing::PrintToString(cuts);
    EXPECT_GE(cuts[0], 10u);
    EXPECT_LE(cuts[0], static_cast<std::uint64_t>(22 + held));
  }
}

TEST(CutDetector, APanIsNoCutButACutAfterItIs) {
  video::CutDetector d({});
  const Picture wide = make_picture(5, 3 * kWidth, kHeight), b = make_picture(2);
  for (int i = 0; i < 5; ++i) d.push(window(wide, 0, 0));
  for (int x = 0; x <= 2 * kWidth; x += 3) d.push(window(wide, x, 0));  // 86 frames
  for (int i = 0; i < 5; ++i) d.push(window(wide, 2 * kWidth, 0));
  const std::uint64_t cut = d.scores().size();
  for (int i = 0; i < 10; ++i) d.push(window(b, 0, 0));
  EXPECT_EQ(frames_of(d.finish()), (std::vector<std::uint64_t>{cut}));
}

TEST(CutDetector, NoiseAloneNeverCuts) {
  video::CutDetector d({});
  const Picture a = make_picture(1);
  workloads::SampleRng rng(9);
  for (int i = 0; i < 60; ++i) {
    Picture noisy = a;
    for (auto& v : noisy.rgb) {
      v = static_cast<std::uint8_t>(
          std::clamp<int>(v + static_cast<int>(rng.below(9)) - 4, 0, 255));
    }
    d.push(window(noisy, 0, 0));
  }
  EXPECT_TRUE(d.finish().empty());
}

TEST(CutDetector, ScenesShorterThanTheMinimumJoinThePreviousOne) {
  EXPECT_EQ(frames_of(video::enforce_min_scene({{2, 9}, {10, 9}, {11, 9}, {20, 9}}, 3)),
            (std::vector<std::uint64_t>{10, 20}));
  video::CutDetector d({.min_scene_frames = 5});
  const Picture a = make_picture(1), b = make_picture(2), c = make_picture(3);
  for (int i = 0; i < 10; ++i) d.push(window(a, 0, 0));
  for (int i = 0; i < 2; ++i) d.push(window(b, 0, 0));
  for (int i = 0; i < 10; ++i) d.push(window(c, 0, 0));
  EXPECT_EQ(frames_of(d.finish()), (std::vector<std::uint64_t>{10}));
}

TEST(CutDetector, RejectsNonsenseOptions) {
  EXPECT_THROW(video::CutDetector({.adaptive_ratio = 1.0}), std::invalid_argument);
  EXPECT_THROW(video::CutDetector({.min_scene_frames = 0}), std::invalid_argument);
}

}  // namespace
