// Ownership and error reporting for the FFmpeg C objects the video workload uses. Internal to
// the workload: only its .cc files (and its tests) include FFmpeg.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace video::av {

/// A problem with one video's data (unreadable, corrupt, undecodable). UDFs turn it into a
/// RecordFailure of that video; it never escapes a UDF.
class VideoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct InputDeleter {
  void operator()(AVFormatContext* c) const { avformat_close_input(&c); }
};
struct OutputDeleter {
  void operator()(AVFormatContext* c) const {
    if (c->pb != nullptr && !(c->oformat->flags & AVFMT_NOFILE)) avio_closep(&c->pb);
    avformat_free_context(c);
  }
};
struct CodecDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct ScalerDeleter {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};

using InputContext = std::unique_ptr<AVFormatContext, InputDeleter>;
using OutputContext = std::unique_ptr<AVFormatContext, OutputDeleter>;
using CodecContext = std::unique_ptr<AVCodecContext, CodecDeleter>;
using Frame = std::unique_ptr<AVFrame, FrameDeleter>;
using Packet = std::unique_ptr<AVPacket, PacketDeleter>;
using Scaler = std::unique_ptr<SwsContext, ScalerDeleter>;

/// Allocations that only fail when memory is exhausted: std::bad_alloc, not a data problem.
Frame make_frame();
Packet make_packet();

/// FFmpeg's text for an AVERROR code.
std::string error_text(int error);

/// Routes FFmpeg's log away from the terminal into a per-thread buffer, so the first
/// warning or error of an operation can become part of a failure's cause. Idempotent.
void install_log_capture();
/// Forgets what this thread captured so far.
void clear_log();
/// The first message of at least warning level captured on this thread since clear_log(),
/// or "" when none.
std::string first_log_message();

/// "what: FFmpeg error text (first logged message)", for a VideoError.
std::string describe(const std::string& what, int error);

/// Converts frames of one size and pixel format to a packed target format (8-bit gray by
/// default, or RGB24) of a fixed size, keeping its context while the source does not change.
class FrameScaler {
 public:
  explicit FrameScaler(AVPixelFormat target = AV_PIX_FMT_GRAY8) : target_(target) {}
  /// Writes `width` x `height` pixels (rows packed, 1 byte each in gray, 3 in RGB24) to `out`.
  /// Throws VideoError when the frame's format cannot be converted.
  void convert(const AVFrame& frame, int width, int height, unsigned char* out);

 private:
  AVPixelFormat target_;
  Scaler scaler_;
  int src_width_ = 0, src_height_ = 0, src_format_ = -1, dst_width_ = 0, dst_height_ = 0;
};

}  // namespace video::av
