// FFmpeg ownership and error helpers. See ffmpeg.h.
#include "video/ffmpeg.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>

#include <fmt/format.h>

namespace video::av {
namespace {

// FFmpeg logs through one process-wide hook, on the thread doing the work; keeping the first
// error per thread gives each video's failure its own detail.
thread_local std::string captured_first;

void capture(void* avcl, int level, const char* format, va_list args) {
  if (level > AV_LOG_ERROR || !captured_first.empty()) return;
  char line[512];
  int print_prefix = 0;
  va_list copy;
  va_copy(copy, args);
  av_log_format_line2(avcl, level, format, copy, line, sizeof line, &print_prefix);
  va_end(copy);
  std::string message(line);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
    message.pop_back();
  }
  captured_first = std::move(message);
}

}  // namespace

Frame make_frame() {
  Frame f(av_frame_alloc());
  if (!f) throw std::bad_alloc();
  return f;
}

Packet make_packet() {
  Packet p(av_packet_alloc());
  if (!p) throw std::bad_alloc();
  return p;
}

std::string error_text(int error) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  if (av_strerror(error, buf, sizeof buf) != 0) return fmt::format("FFmpeg error {}", error);
  return buf;
}

void install_log_capture() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(capture); });
}

void clear_log() {
  captured_first.clear();
}

std::string first_log_message() {
  return captured_first;
}

std::string describe(const std::string& what, int error) {
  std::string out = fmt::format("{}: {}", what, error_text(error));
  const std::string logged = first_log_message();
  if (!logged.empty()) out += fmt::format(" ({})", logged);
  return out;
}

void FrameScaler::convert(const AVFrame& frame, int width, int height, unsigned char* out) {
  if (frame.width <= 0 || frame.height <= 0 || width <= 0 || height <= 0) {
    throw VideoError(fmt::format("cannot scale a {}x{} frame to {}x{}", frame.width, frame.height,
                                 width, height));
  }
  if (!scaler_ || frame.width != src_width_ || frame.height != src_height_ ||
      frame.format != src_format_ || width != dst_width_ || height != dst_height_) {
    // Area averaging keeps thin glyph strokes when shrinking, which matters for OCR.
    scaler_.reset(sws_getContext(frame.width, frame.height,
                                 static_cast<AVPixelFormat>(frame.format), width, height, target_,
                                 SWS_AREA, nullptr, nullptr, nullptr));
    if (!scaler_) {
      const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(frame.format));
      throw VideoError(fmt::format("cannot convert pixel format {} to {}",
                                   name != nullptr ? name : "unknown",
                                   av_get_pix_fmt_name(target_)));
    }
    src_width_ = frame.width;
    src_height_ = frame.height;
    src_format_ = frame.format;
    dst_width_ = width;
    dst_height_ = height;
  }
  uint8_t* dst[4] = {out, nullptr, nullptr, nullptr};
  int dst_stride[4] = {width * av_get_padded_bits_per_pixel(av_pix_fmt_desc_get(target_)) / 8, 0, 0,
                       0};
  const int rows =
      sws_scale(scaler_.get(), frame.data, frame.linesize, 0, frame.height, dst, dst_stride);
  if (rows != height) {
    throw VideoError(fmt::format("scaling a frame to {}x{} produced {} rows", width, height, rows));
  }
}

}  // namespace video::av
