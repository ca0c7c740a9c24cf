// Reading frames (workloads/video/reader.cc): frames addressed by timestamp, in any order and
// with reordered frames, are exactly the sequentially decoded ones; unreadable files are
// VideoErrors naming the file and the reason.
#include "video/reader.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "video/encoder.h"
#include "video/ffmpeg.h"
#include "workloads/video/video_testing.h"
#include <gtest/gtest.h>

namespace fs = std::filesystem;

namespace {

using video_testing::TempDir;

// A video whose every frame differs (a bar moves one step per frame over a gradient), so a
// frame decoded at the wrong position cannot pass for the right one.
void write_moving_bar(const fs::path& path, int frames, int gop, int b_frames) {
  constexpr int kW = 96, kH = 64;
  video::VideoWriter w(path.string(),
                       {.width = kW, .height = kH, .fps = 10, .gop = gop, .b_frames = b_frames});
  std::vector<std::uint8_t> bgra(static_cast<std::size_t>(kW) * kH * 4);
  for (int f = 0; f < frames; ++f) {
    for (int y = 0; y < kH; ++y) {
      for (int x = 0; x < kW; ++x) {
        const bool bar = x >= (f * 3) % kW && x < (f * 3) % kW + 6;
        const auto v = static_cast<std::uint8_t>(bar ? 255 : (x + y) % 128);
        std::uint8_t* p = &bgra[(static_cast<std::size_t>(y) * kW + x) * 4];
        p[0] = p[1] = p[2] = v;
        p[3] = 255;
      }
    }
    w.write_bgra(bgra.data(), kW * 4);
  }
  w.finish();
}

std::uint64_t checksum(const AVFrame& frame) {
  std::vector<std::uint8_t> gray(static_cast<std::size_t>(frame.width) * frame.height);
  video::av::FrameScaler scaler;
  scaler.convert(frame, frame.width, frame.height, gray.data());
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (std::uint8_t b : gray) h = (h ^ b) * 1099511628211ULL;
  return h;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Reading frames

TEST(VideoReader, FramesAddressedByTimestampAreExactlyTheSequentiallyDecodedOnes) {
  TempDir tmp;
  struct Case {
    const char* name;
    int gop;
    int b_frames;
  };
  // MP4 without reordering, and Matroska with bidirectional frames (decode order differs from
  // presentation order, and the index holds decode times).
  for (const Case& c : {Case{"plain.mp4", 5, 0}, Case{"reordered.mkv", 7, 2}}) {
    SCOPED_TRACE(c.name);
    const fs::path path = tmp.path() / c.name;
    constexpr int kFrames = 23;
    write_moving_bar(path, kFrames, c.gop, c.b_frames);

    std::vector<std::int64_t> pts;
    std::vector<std::uint64_t> sums;
    {
      video::FrameReader seq(path.string());
      while (const AVFrame* f = seq.next()) {
        pts.push_back(seq.timestamp());
        sums.push_back(checksum(*f));
      }
      EXPECT_EQ(seq.seeks(), 0u);
    }
    ASSERT_EQ(pts.size(), static_cast<std::size_t>(kFrames));
    ASSERT_TRUE(std::is_sorted(pts.begin(), pts.end()));
    ASSERT_EQ(std::set<std::uint64_t>(sums.begin(), sums.end()).size(), sums.size());

    video::FrameReader reader(path.string());
    EXPECT_EQ(reader.info().width, 96u);
    EXPECT_EQ(reader.info().height, 64u);
    EXPECT_NEAR(reader.info().fps, 10.0, 1e-9);
    EXPECT_NEAR(reader.info().duration_seconds, 2.3, 0.15);
    // Forward in small steps: decoding on is no longer than seeking, so no seek at all.
    for (int i = 0; i < kFrames; i += 2) {
      ASSERT_EQ(checksum(*reader.frame_at(pts[i])), sums[i]) << "frame " << i;
    }
    EXPECT_EQ(reader.seeks(), 0u);
    // Random order, with repeats and jumps backwards.
    std::vector<int> order(kFrames);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937 rng(7);
    std::shuffle(order.begin(), order.end(), rng);
    order.push_back(order.back());
    for (int i : order) ASSERT_EQ(checksum(*reader.frame_at(pts[i])), sums[i]) << "frame " << i;
    EXPECT_GT(reader.seeks(), 0u);
    // Fewer frames decoded than reading from the start for every frame would need.
    EXPECT_LT(reader.decoded(), static_cast<std::size_t>(kFrames * kFrames / 2));
    EXPECT_THROW(reader.frame_at(pts.back() + 1000), video::av::VideoError);
  }
}

TEST(VideoReader, UnreadableFilesAreVideoErrorsNamingTheFileAndTheReason) {
  TempDir tmp;
  const fs::path junk = tmp.path() / "junk.mp4";
  std::ofstream(junk) << "this is not a video at all, just some text";
  const fs::path missing = tmp.path() / "missing.mp4";
  try {
    video::FrameReader r(junk.string());
    FAIL() << "expected VideoError";
  } catch (const video::av::VideoError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open video " + junk.string()), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("Invalid data"), std::string::npos) << e.what();
  }
  EXPECT_THROW(video::FrameReader(missing.string()), video::av::VideoError);
  EXPECT_THROW(video::FrameReader(tmp.path().string()), video::av::VideoError);
}
