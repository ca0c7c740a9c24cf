// The arithmetic of the video workload (workloads/video/analysis.cc): cuts from frame
// differences, sampling within a scene, difference hashes and a scene's summary; the word
// accuracy that scores captions (check.cc) and the durable output files (output.h).
#include "video/analysis.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/workload_testing.h"
#include "video/check.h"
#include "video/output.h"
#include "video/video.h"
#include "workloads/video/video_testing.h"
#include <gtest/gtest.h>

namespace {

using video_testing::TempDir;
using workload_testing::read_file;
using workload_testing::temporaries_in;

}  // namespace

// ---------------------------------------------------------------------------------------------
// The arithmetic

TEST(VideoAnalysis, CutsAreFramesWhoseDifferenceExceedsTheThreshold) {
  const std::vector<double> d{0, 1.5, 2.0, 60.0, 0.5, 25.0, 25.1, 0.0};
  EXPECT_EQ(video::cut_frames(d, 25.0), (std::vector<std::size_t>{3, 6}));
  EXPECT_TRUE(video::cut_frames(std::vector<double>{99.0}, 25.0).empty());  // frame 0 never cuts
  const std::vector<std::uint8_t> a{0, 10, 255}, b{10, 10, 0};
  EXPECT_DOUBLE_EQ(video::mean_abs_difference(a, b), (10.0 + 0 + 255) / 3);
  EXPECT_THROW(video::mean_abs_difference(a, std::vector<std::uint8_t>{1}), std::invalid_argument);
}

TEST(VideoAnalysis, SamplingSpreadsKFramesOverTheSceneOrTakesEveryNth) {
  using V = std::vector<std::uint64_t>;
  EXPECT_EQ(video::sample_offsets(10, {.every = 0, .per_scene = 3}), (V{0, 5, 9}));
  EXPECT_EQ(video::sample_offsets(10, {.every = 0, .per_scene = 2}), (V{0, 9}));
  EXPECT_EQ(video::sample_offsets(10, {.every = 0, .per_scene = 1}), (V{4}));
  EXPECT_EQ(video::sample_offsets(2, {.every = 0, .per_scene = 3}), (V{0, 1}));
  EXPECT_EQ(video::sample_offsets(10, {.every = 4, .per_scene = 0}), (V{0, 4, 8}));
  EXPECT_EQ(video::sample_offsets(1, {.every = 4, .per_scene = 0}), (V{0}));
  for (std::uint64_t n = 1; n < 40; ++n) {
    for (int k = 1; k < 9; ++k) {
      const V s = video::sample_offsets(n, {.every = 0, .per_scene = k});
      ASSERT_EQ(s.size(), std::min<std::uint64_t>(n, static_cast<std::uint64_t>(k)));
      ASSERT_TRUE(std::is_sorted(s.begin(), s.end()));
      ASSERT_EQ(std::set<std::uint64_t>(s.begin(), s.end()).size(), s.size()) << n << " " << k;
      ASSERT_LT(s.back(), n);
    }
  }
  EXPECT_THROW(video::sample_offsets(5, {.every = 2, .per_scene = 2}), std::invalid_argument);
  EXPECT_THROW(video::sample_offsets(5, {.every = 0, .per_scene = 0}), std::invalid_argument);
}

TEST(VideoAnalysis, DifferenceHashFollowsLayoutNotBrightness) {
  video::FrameImage img;
  img.width = 90;
  img.height = 40;
  img.pixels.resize(90 * 40);
  for (std::uint32_t y = 0; y < img.height; ++y) {
    for (std::uint32_t x = 0; x < img.width; ++x)
      img.pixels[y * 90 + x] = static_cast<std::uint8_t>(250 - 2 * x);
  }
  // Brightness falls to the right everywhere: every left cell is brighter.
  EXPECT_EQ(video::difference_hash(img), ~std::uint64_t{0});
  video::FrameImage darker = img;
  for (auto& p : darker.pixels) p = static_cast<std::uint8_t>(p / 2);
  EXPECT_EQ(video::difference_hash(darker), video::difference_hash(img));
  video::FrameImage flat = img;
  std::fill(flat.pixels.begin(), flat.pixels.end(), 128);
  EXPECT_EQ(video::difference_hash(flat), 0u);
  EXPECT_EQ(video::hamming_distance(0, ~std::uint64_t{0}), 64);
  EXPECT_EQ(video::hamming_distance(0b1011, 0b0001), 2);
  EXPECT_EQ(video::parse_signature(video::signature_hex(0x0123456789abcdefULL)),
            0x0123456789abcdefULL);
  EXPECT_EQ(video::signature_hex(5), "0x0000000000000005");
  EXPECT_THROW(video::parse_signature("0xzz"), std::invalid_argument);
  video::FrameImage empty;
  EXPECT_THROW(video::difference_hash(empty), std::invalid_argument);
}

TEST(VideoAnalysis, SceneSummaryVotesTextPicksMedoidAndFlagsNearDuplicates) {
  video::Scene scene;
  scene.index = 2;
  scene.first_frame = 10;
  scene.last_frame = 19;
  const std::vector<video::FrameRef> refs{
      {2, 10, 0, 0}, {2, 13, 0, 0}, {2, 16, 0, 0}, {2, 19, 0, 0}};
  const std::vector<std::string> texts{"Video 1 Scene 3", "", "Vide0 1 Scene 3", "Video 1 Scene 3"};
  const std::vector<std::uint64_t> sigs{0x7, 0x3, 0xff00, 0x1};
  const video::SceneRecord r = video::summarize_scene(scene, refs, texts, sigs, 2);
  EXPECT_EQ(r.index, 2u);
  EXPECT_EQ(r.text, "Video 1 Scene 3");
  EXPECT_EQ(r.signature, 0x3u);  // nearest to all others, the earlier of two such
  ASSERT_EQ(r.frames.size(), 4u);
  EXPECT_FALSE(r.frames[0].near_duplicate);
  EXPECT_TRUE(r.frames[1].near_duplicate);
  EXPECT_EQ(r.frames[1].duplicate_of, 10);
  EXPECT_FALSE(r.frames[2].near_duplicate);
  EXPECT_TRUE(r.frames[3].near_duplicate);
  EXPECT_EQ(r.near_duplicates, 2u);
  EXPECT_EQ(video::clean_text("  Video 3\n\nScene 2 \f"), "Video 3 Scene 2");
  EXPECT_THROW(video::summarize_scene(scene, refs, texts, {1}, 2), std::invalid_argument);
}

TEST(VideoAnalysis, WordAccuracyCountsWordEditsIgnoringCaseAndPunctuation) {
  EXPECT_DOUBLE_EQ(video::word_accuracy("Video 3 Scene 2 river", "video 3 scene 2 river."), 1.0);
  EXPECT_DOUBLE_EQ(video::word_accuracy("Video 3 Scene 2 river", "Video 8 Scene 2 river"), 0.8);
  EXPECT_DOUBLE_EQ(video::word_accuracy("a b", "completely different text here"), 0.0);
}

TEST(VideoOutput, AppendedLinesAreCompleteAndTornTailsAreIgnored) {
  TempDir tmp;
  const std::string path = (tmp.path() / "r.jsonl").string();
  std::ofstream(path) << "stale content from an earlier run\n";
  {
    video::JsonlAppender out(path);
    EXPECT_TRUE(video::read_complete_lines(path).empty());  // replaced, not appended to
    out.append(R"({"a":1})");
    out.append(R"({"b":2})");
    EXPECT_THROW(out.append("two\nlines"), std::invalid_argument);
  }
  std::ofstream(path, std::ios::app) << R"({"c":)";  // what a crash mid-write could leave
  EXPECT_EQ(video::read_complete_lines(path),
            (std::vector<std::string>{R"({"a":1})", R"({"b":2})"}));
  video::write_file_atomically(path, "x\n");
  EXPECT_EQ(read_file(path), "x\n");
  EXPECT_TRUE(temporaries_in(tmp.path()).empty());
}
