// Video encoding for generated corpora. See encoder.h.
#include "video/encoder.h"

#include <cerrno>
#include <new>
#include <stdexcept>

#include <fmt/format.h>

namespace video {

void VideoWriter::fail(const std::string& what, int error) const {
  throw std::runtime_error(av::describe(fmt::format("{} {}", what, path_), error));
}

VideoWriter::VideoWriter(const std::string& path, const EncoderOptions& o)
    : path_(path), options_(o) {
  if (o.width < 16 || o.height < 16 || o.width % 2 != 0 || o.height % 2 != 0) {
    throw std::invalid_argument(
        fmt::format("video size must be even and at least 16x16, got {}x{}", o.width, o.height));
  }
  if (o.fps < 1 || o.fps > 240 || o.gop < 1 || o.quality < 1 || o.quality > 31 || o.b_frames < 0 ||
      o.b_frames > 16) {
    throw std::invalid_argument(fmt::format(
        "need fps in [1, 240], gop >= 1, quality in [1, 31] and b_frames in [0, 16]; got fps "
        "{}, gop {}, quality {}, b_frames {}",
        o.fps, o.gop, o.quality, o.b_frames));
  }
  av::install_log_capture();
  av::clear_log();
  const AVCodec* encoder = avcodec_find_encoder_by_name(o.codec.c_str());
  if (encoder == nullptr || encoder->type != AVMEDIA_TYPE_VIDEO) {
    throw std::runtime_error(fmt::format(
        "video encoder '{}' is not available in this FFmpeg build (try mpeg4)", o.codec));
  }
  AVFormatContext* raw = nullptr;
  int r = avformat_alloc_output_context2(&raw, nullptr, nullptr, path.c_str());
  if (r < 0 || raw == nullptr)
    fail("no container format for the name of", r < 0 ? r : AVERROR_MUXER_NOT_FOUND);
  format_.reset(raw);
  stream_ = avformat_new_stream(format_.get(), nullptr);
  if (stream_ == nullptr) throw std::bad_alloc();
  codec_.reset(avcodec_alloc_context3(encoder));
  if (!codec_) throw std::bad_alloc();
  AVCodecContext& c = *codec_;
  c.width = o.width;
  c.height = o.height;
  c.time_base = AVRational{1, o.fps};
  c.framerate = AVRational{o.fps, 1};
  c.gop_size = o.gop;
  c.max_b_frames = o.b_frames;
  c.pix_fmt = AV_PIX_FMT_YUV420P;
  c.thread_count = 1;
  c.flags |= AV_CODEC_FLAG_QSCALE;
  c.global_quality = FF_QP2LAMBDA * o.quality;
  if (format_->oformat->flags & AVFMT_GLOBALHEADER) c.flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  r = avcodec_open2(codec_.get(), encoder, nullptr);
  if (r < 0) fail(fmt::format("cannot open encoder {} for", o.codec), r);
  r = avcodec_parameters_from_context(stream_->codecpar, codec_.get());
  if (r < 0) fail("cannot describe the stream of", r);
  stream_->time_base = c.time_base;
  stream_->avg_frame_rate = c.framerate;
  if (!(format_->oformat->flags & AVFMT_NOFILE)) {
    r = avio_open(&format_->pb, path.c_str(), AVIO_FLAG_WRITE);
    if (r < 0) fail("cannot create", r);
  }
  r = avformat_write_header(format_.get(), nullptr);
  if (r < 0) fail("cannot write the header of", r);

  scaler_.reset(sws_getContext(o.width, o.height, AV_PIX_FMT_BGRA, o.width, o.height,
                               AV_PIX_FMT_YUV420P, SWS_BICUBIC, nullptr, nullptr, nullptr));
  if (!scaler_) throw std::runtime_error("cannot convert BGRA to YUV 4:2:0");
  frame_->format = AV_PIX_FMT_YUV420P;
  frame_->width = o.width;
  frame_->height = o.height;
  r = av_frame_get_buffer(frame_.get(), 0);
  if (r < 0) fail("cannot allocate a frame for", r);
}

void VideoWriter::write_bgra(const std::uint8_t* pixels, int stride) {
  if (finished_) throw std::logic_error(fmt::format("{}: write after finish()", path_));
  // The encoder may still reference the previous frame's buffers.
  int r = av_frame_make_writable(frame_.get());
  if (r < 0) fail("cannot reuse the frame buffer of", r);
  const std::uint8_t* src[4] = {pixels, nullptr, nullptr, nullptr};
  const int src_stride[4] = {stride, 0, 0, 0};
  sws_scale(scaler_.get(), src, src_stride, 0, options_.height, frame_->data, frame_->linesize);
  frame_->pts = next_pts_++;
  r = avcodec_send_frame(codec_.get(), frame_.get());
  if (r < 0) fail("cannot encode a frame of", r);
  drain(false);
}

void VideoWriter::drain(bool flushing) {
  for (;;) {
    int r = avcodec_receive_packet(codec_.get(), packet_.get());
    if (r == AVERROR(EAGAIN) && !flushing) return;
    if (r == AVERROR_EOF) return;
    if (r < 0) fail("cannot encode", r);
    av_packet_rescale_ts(packet_.get(), codec_->time_base, stream_->time_base);
    packet_->stream_index = stream_->index;
    r = av_interleaved_write_frame(format_.get(), packet_.get());  // takes the packet's data
    if (r < 0) fail("cannot write", r);
  }
}

void VideoWriter::finish() {
  if (finished_) return;
  finished_ = true;
  int r = avcodec_send_frame(codec_.get(), nullptr);
  if (r < 0) fail("cannot flush the encoder of", r);
  drain(true);
  r = av_write_trailer(format_.get());
  if (r < 0) fail("cannot finish", r);
  if (format_->pb != nullptr) {
    r = avio_closep(&format_->pb);
    if (r < 0) fail("cannot close", r);
  }
}

}  // namespace video
