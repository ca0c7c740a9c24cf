// Reading the frames of one video file: its best video stream, decoded either sequentially or
// by timestamp (seek to the keyframe before, decode forward).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "video/ffmpeg.h"
#include "video/video.h"

namespace video {

/// An opened video file with a decoder for its best video stream. Not thread-safe: one
/// reader per actor. Every data problem throws av::VideoError naming the file.
class FrameReader {
 public:
  /// Opens the container, finds the video stream and opens its decoder.
  explicit FrameReader(const std::string& path);

  const std::string& path() const { return path_; }
  /// Metadata read from the container.
  const VideoInfo& info() const { return info_; }

  /// The next frame in presentation order, or nullptr at the end of the stream. Valid until
  /// the next call. Frame timestamps are best-effort presentation times in stream units.
  const AVFrame* next();

  /// The frame whose timestamp is `pts` (or, should there be none, the first one after it).
  /// Seeks to the keyframe at or before `pts` and decodes forward from there, unless decoding
  /// forward from the current position is about as short (the target is just ahead, or no
  /// keyframe lies between here and it).
  const AVFrame* frame_at(std::int64_t pts);

  /// The timestamp of the frame last returned by next() or frame_at().
  std::int64_t timestamp() const { return timestamp_; }
  /// A stream timestamp in seconds from the start of the stream.
  double seconds(std::int64_t pts) const;
  /// Seconds per timestamp unit, and the timestamp of time 0.
  double time_base() const;
  std::int64_t stream_start() const { return start_; }
  /// How long one frame is shown, in seconds (from the frame rate; 0 when unknown).
  double frame_seconds() const;

  /// Seeks performed and frames decoded so far (tests check that forward reads are used).
  std::size_t seeks() const { return seeks_; }
  std::size_t decoded() const { return decoded_; }

 private:
  void seek(std::int64_t pts);
  bool forward_is_shorter(std::int64_t pts) const;
  [[noreturn]] void fail(const std::string& what, int error) const;

  std::string path_;
  VideoInfo info_;
  av::InputContext format_;
  av::CodecContext codec_;
  AVStream* stream_ = nullptr;
  av::Packet packet_ = av::make_packet();
  av::Frame frame_ = av::make_frame();
  std::int64_t start_ = 0;        // the stream's first timestamp
  std::int64_t frame_ticks_ = 1;  // one frame's duration in stream units (at least 1)
  bool fresh_ = true;             // nothing decoded since opening or seeking to the start
  bool draining_ = false;         // the end of the file was sent to the decoder
  bool ended_ = false;            // the decoder has returned its last frame
  std::int64_t timestamp_ = 0;    // of the frame last returned
  int bad_packets_ = 0;           // consecutive packets the decoder rejected
  std::size_t seeks_ = 0;
  std::size_t decoded_ = 0;
};

/// Size of a frame downscaled (never upscaled) to at most `max_width`, keeping the aspect
/// ratio; both dimensions at least 1.
struct FrameSize {
  int width = 0;
  int height = 0;
};
FrameSize scaled_size(int width, int height, int max_width);

}  // namespace video
