// Sequential and timestamp-addressed frame reading with FFmpeg. See reader.h.
#include "video/reader.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <filesystem>
#include <new>

#include <fmt/format.h>

namespace video {
namespace {

// A few broken packets are normal in damaged files and a decoder resynchronises after them;
// this many in a row means the stream is not decodable.
constexpr int kMaxConsecutiveBadPackets = 32;

// What a seek costs beyond the frames it decodes, in frames: repositioning the demuxer and
// flushing the decoder.
constexpr std::int64_t kSeekCostFrames = 2;

double rational(AVRational r) {
  return r.den == 0 ? 0.0 : av_q2d(r);
}

}  // namespace

FrameSize scaled_size(int width, int height, int max_width) {
  if (width <= 0 || height <= 0) return {std::max(width, 1), std::max(height, 1)};
  if (max_width <= 0 || width <= max_width) return {width, height};
  const int h = static_cast<int>(std::lround(static_cast<double>(height) * max_width / width));
  return {max_width, std::max(h, 1)};
}

void FrameReader::fail(const std::string& what, int error) const {
  throw av::VideoError(av::describe(fmt::format("{} {}", what, path_), error));
}

FrameReader::FrameReader(const std::string& path) : path_(path) {
  av::install_log_capture();
  av::clear_log();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw av::VideoError(fmt::format("cannot open video {}: not a readable file", path));
  }
  AVFormatContext* raw = nullptr;
  int r = avformat_open_input(&raw, path.c_str(), nullptr, nullptr);
  if (r < 0) fail("cannot open video", r);  // avformat_open_input frees `raw` on failure
  format_.reset(raw);
  r = avformat_find_stream_info(format_.get(), nullptr);
  if (r < 0) fail("cannot read the streams of", r);

  const AVCodec* decoder = nullptr;
  r = av_find_best_stream(format_.get(), AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0);
  if (r == AVERROR_STREAM_NOT_FOUND) {
    throw av::VideoError(fmt::format("video {} has no video stream", path));
  }
  if (r < 0 || decoder == nullptr) {
    fail("no decoder for the video stream of", r < 0 ? r : AVERROR_DECODER_NOT_FOUND);
  }
  stream_ = format_->streams[r];
  codec_.reset(avcodec_alloc_context3(decoder));
  if (!codec_) throw std::bad_alloc();
  r = avcodec_parameters_to_context(codec_.get(), stream_->codecpar);
  if (r < 0) fail("cannot configure the decoder of", r);
  // The pool's replicas are the parallelism; decoder threads would oversubscribe the cores.
  codec_->thread_count = 1;
  r = avcodec_open2(codec_.get(), decoder, nullptr);
  if (r < 0) fail("cannot open the decoder of", r);

  start_ = stream_->start_time != AV_NOPTS_VALUE ? stream_->start_time : 0;
  AVRational rate =
      stream_->avg_frame_rate.num > 0 ? stream_->avg_frame_rate : stream_->r_frame_rate;
  info_.path = path;
  info_.stem = std::filesystem::path(path).stem().string();
  info_.codec = decoder->name;
  info_.fps = rate.num > 0 ? rational(rate) : 0.0;
  info_.width = static_cast<std::uint32_t>(std::max(stream_->codecpar->width, 0));
  info_.height = static_cast<std::uint32_t>(std::max(stream_->codecpar->height, 0));
  info_.frames_declared = std::max<std::int64_t>(stream_->nb_frames, 0);
  if (format_->duration != AV_NOPTS_VALUE && format_->duration > 0) {
    info_.duration_seconds = static_cast<double>(format_->duration) / AV_TIME_BASE;
  } else if (stream_->duration != AV_NOPTS_VALUE && stream_->duration > 0) {
    info_.duration_seconds = static_cast<double>(stream_->duration) * rational(stream_->time_base);
  }
  if (rate.num > 0) {
    frame_ticks_ = std::max<std::int64_t>(1, av_rescale_q(1, av_inv_q(rate), stream_->time_base));
  }
  if (info_.width == 0 || info_.height == 0) {
    throw av::VideoError(fmt::format("video {} has no frame size", path));
  }
}

double FrameReader::seconds(std::int64_t pts) const {
  return static_cast<double>(pts - start_) * rational(stream_->time_base);
}

double FrameReader::time_base() const {
  return rational(stream_->time_base);
}

double FrameReader::frame_seconds() const {
  return info_.fps > 0 ? 1.0 / info_.fps : 0.0;
}

const AVFrame* FrameReader::next() {
  if (ended_) return nullptr;
  for (;;) {
    int r = avcodec_receive_frame(codec_.get(), frame_.get());
    if (r == 0) {
      ++decoded_;
      const std::int64_t ts = frame_->best_effort_timestamp;
      // A frame without a timestamp follows its predecessor, so positions stay ordered.
      timestamp_ = ts != AV_NOPTS_VALUE ? ts : (fresh_ ? start_ : timestamp_ + frame_ticks_);
      fresh_ = false;
      return frame_.get();
    }
    if (r == AVERROR_EOF) {
      ended_ = true;
      return nullptr;
    }
    if (r != AVERROR(EAGAIN)) fail("cannot decode a frame of", r);
    if (draining_) {
      ended_ = true;
      return nullptr;
    }
    r = av_read_frame(format_.get(), packet_.get());
    if (r == AVERROR_EOF) {
      draining_ = true;
      r = avcodec_send_packet(codec_.get(), nullptr);
      if (r < 0 && r != AVERROR_EOF) fail("cannot finish decoding", r);
      continue;
    }
    if (r < 0) fail("cannot read", r);
    if (packet_->stream_index != stream_->index) {
      av_packet_unref(packet_.get());
      continue;
    }
    r = avcodec_send_packet(codec_.get(), packet_.get());
    av_packet_unref(packet_.get());
    if (r == AVERROR_INVALIDDATA && ++bad_packets_ < kMaxConsecutiveBadPackets) continue;
    if (r < 0) fail("cannot decode", r);
    bad_packets_ = 0;
  }
}

bool FrameReader::forward_is_shorter(std::int64_t pts) const {
  // Freshly opened, the position is just before the first frame.
  const std::int64_t position = fresh_ ? start_ - frame_ticks_ : timestamp_;
  if (ended_ || position >= pts) return false;
  // Decoding forward costs the frames from here to the target; seeking costs those from the
  // keyframe to the target plus about a frame's worth of repositioning and flushing.
  const std::int64_t slack = kSeekCostFrames * frame_ticks_;
  if (pts - position <= slack) return true;
  const int i = av_index_search_timestamp(stream_, pts, AVSEEK_FLAG_BACKWARD);
  const AVIndexEntry* keyframe = i >= 0 ? avformat_index_get_entry(stream_, i) : nullptr;
  // Without an index nothing bounds a forward read; a seek always is.
  if (keyframe == nullptr) return false;
  return keyframe->timestamp - position <= slack;
}

void FrameReader::seek(std::int64_t pts) {
  ++seeks_;
  int r = av_seek_frame(format_.get(), stream_->index, pts, AVSEEK_FLAG_BACKWARD);
  if (r < 0) fail(fmt::format("cannot seek to timestamp {} in", pts), r);
  avcodec_flush_buffers(codec_.get());
  draining_ = false;
  ended_ = false;
  bad_packets_ = 0;
  fresh_ = false;
}

const AVFrame* FrameReader::frame_at(std::int64_t pts) {
  av::clear_log();
  if (!forward_is_shorter(pts)) {
    seek(pts);
    // An index that disagrees with presentation times (edit lists, reordered frames) can
    // land after the target; then read forward from the very start instead.
    const AVFrame* first = next();
    if (first == nullptr || timestamp_ > pts) {
      seek(std::min(start_, pts));
      first = next();
    }
    if (first != nullptr && timestamp_ >= pts) return first;
  }
  while (const AVFrame* f = next()) {
    if (timestamp_ >= pts) return f;
  }
  throw av::VideoError(fmt::format("video {} has no frame at or after timestamp {} ({:.3f} s)",
                                   path_, pts, seconds(pts)));
}

}  // namespace video
