// Writing a video file frame by frame with libavcodec/libavformat: the generator of test
// corpora (`make-videos`).
#pragma once

#include <cstdint>
#include <string>

#include "video/ffmpeg.h"

namespace video {

/// What to write.
struct EncoderOptions {
  int width = 320;
  int height = 180;
  int fps = 5;
  int gop = 10;                 ///< frames per keyframe interval
  std::string codec = "mpeg4";  ///< an encoder of this FFmpeg build (MPEG-4 part 2 by default)
  int quality = 3;              ///< fixed quantiser, 1 (best) .. 31
  /// Reordered (bidirectional) frames between references. 0 by default, as in most screen
  /// captures; tests use more to prove that timestamps, not decode order, address frames.
  int b_frames = 0;
};

/// An open output file. Frames are 32-bit BGRA rows (cairo's ARGB32 on little-endian
/// machines). The container follows the file name's extension. Every failure throws
/// std::runtime_error naming the file.
class VideoWriter {
 public:
  VideoWriter(const std::string& path, const EncoderOptions& options);
  VideoWriter(const VideoWriter&) = delete;
  VideoWriter& operator=(const VideoWriter&) = delete;

  /// Encodes one frame of width x height pixels with rows `stride` bytes apart.
  void write_bgra(const std::uint8_t* pixels, int stride);
  /// Flushes the encoder and writes the container trailer. Without it the file is incomplete.
  void finish();

  std::int64_t frames() const { return next_pts_; }

 private:
  void drain(bool flushing);
  [[noreturn]] void fail(const std::string& what, int error) const;

  std::string path_;
  EncoderOptions options_;
  av::OutputContext format_;
  av::CodecContext codec_;
  AVStream* stream_ = nullptr;
  av::Scaler scaler_;
  av::Frame frame_ = av::make_frame();
  av::Packet packet_ = av::make_packet();
  std::int64_t next_pts_ = 0;
  bool finished_ = false;
};

}  // namespace video
