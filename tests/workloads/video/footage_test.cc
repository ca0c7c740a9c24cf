// The footage corpus end to end with default options: cuts, dissolves and fades found once,
// nothing cut inside pans, zooms and scrolling, document text read on slide frames.
#include "video/footage.h"

#include <filesystem>
#include <string>

#include "support/workload_testing.h"
#include "video/convert.h"
#include "video/footage_check.h"
#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

bool material_installed() {
  for (const auto& p : video::default_footage_documents()) {
    if (!fs::exists(p)) return false;
  }
  for (const auto& p : video::default_footage_pictures()) {
    if (!fs::exists(p)) return false;
  }
  return true;
}

// Small enough for two cores: three slides per slideshow, otherwise the default corpus
// (slides of 1.2 s, transitions of 0.8 s, motion of 3 s at 10 frames per second).
video::FootageOptions small_footage() {
  video::FootageOptions o;
  o.slides = 3;
  return o;
}

TEST(Footage, TheCorpusDescribesWhatItDrew) {
  if (!material_installed()) GTEST_SKIP() << "scripts/install-deps.sh installs the material";
  workload_testing::TempDir tmp("footage-corpus");
  const video::FootageCorpus made = video::make_footage(tmp.path().string(), small_footage());
  const video::FootageCorpus loaded = video::load_footage(tmp.path().string());
  ASSERT_EQ(loaded.videos.size(), made.videos.size());
  ASSERT_EQ(made.videos.size(), 6u);
  for (const auto& v : loaded.videos) {
    SCOPED_TRACE(v.video);
    EXPECT_TRUE(fs::exists(tmp.path() / v.file));
    for (const auto& s : v.slides) EXPECT_FALSE(s.text.empty());
    for (const auto& c : v.cuts) EXPECT_LE(c.last, v.frames);
  }
  // Slideshows of three slides have two changes each; the pictures two; the screen one.
  EXPECT_EQ(loaded.videos[0].cuts.size(), 2u);
  EXPECT_EQ(loaded.videos[4].cuts.size(), 2u);
  EXPECT_EQ(loaded.videos[4].motion.size(), 3u);
  EXPECT_EQ(loaded.videos[5].cuts.size(), 1u);
}

TEST(Footage, DefaultOptionsFindTheCutsAndReadTheSlides) {
  if (!material_installed()) GTEST_SKIP() << "scripts/install-deps.sh installs the material";
  workload_testing::TempDir tmp("footage-run");
  const fs::path in = tmp.path() / "in", out = tmp.path() / "out";
  const video::FootageCorpus corpus = video::make_footage(in.string(), small_footage());
  video::ConvertOptions c;
  c.inputs.paths = {in.string()};
  c.out_dir = out.string();
  c.progress = false;
  c.pipeline.sampling.per_scene = 2;  // the defaults otherwise
  video::convert(c);
  const video::FootageCheck check = video::check_footage(corpus, out.string());
  for (const auto& v : check.videos) {
    SCOPED_TRACE(v.video);
    EXPECT_TRUE(v.present);
    EXPECT_EQ(v.matched_cuts, v.expected_cuts);
    EXPECT_EQ(v.detected_cuts, v.expected_cuts);
  }
  EXPECT_GE(check.precision, 0.95);
  EXPECT_GE(check.recall, 0.95);
  EXPECT_EQ(check.cuts_in_motion, 0u);
  EXPECT_GE(check.text_recall, 0.8);
}

}  // namespace
