// Byte codecs (rayorch::Codec) for the values the video stages pass between each other, so
// they can cross a process boundary (e.g. between the Ray actors of the Python package).
// VideoRecord's (its JSON line, for the run journal) is in video.h. The encoders are
// templates over the sink, so a frame's pixels can be written straight into memory shared
// with another process.
#pragma once

#include <string>
#include <string_view>

#include "video/video.h"

#include "rayorch/codec.h"

namespace video::codec_detail {

template <class T, rayorch::ByteSink S>
void put(const T& v, S& out) {
  rayorch::encode_to(v, out);
}
template <class T>
void get(T& v, std::string_view& in) {
  v = rayorch::Codec<T>::decode(in);
}

}  // namespace video::codec_detail

template <>
struct rayorch::Codec<video::VideoInfo> {
  template <ByteSink S>
  static void encode(const video::VideoInfo& v, S& out) {
    using video::codec_detail::put;
    put(v.path, out), put(v.stem, out), put(v.codec, out), put(v.duration_seconds, out);
    put(v.fps, out), put(v.width, out), put(v.height, out), put(v.frames_declared, out);
  }
  static video::VideoInfo decode(std::string_view& in) {
    using video::codec_detail::get;
    video::VideoInfo v;
    get(v.path, in), get(v.stem, in), get(v.codec, in), get(v.duration_seconds, in);
    get(v.fps, in), get(v.width, in), get(v.height, in), get(v.frames_declared, in);
    return v;
  }
};

template <>
struct rayorch::Codec<video::Scene> {
  template <ByteSink S>
  static void encode(const video::Scene& v, S& out) {
    using video::codec_detail::put;
    put(v.index, out), put(v.first_frame, out), put(v.last_frame, out);
    put(v.start_seconds, out), put(v.end_seconds, out), put(v.cut_score, out);
    put(v.pts, out), put(v.time_base, out), put(v.stream_start, out);
  }
  static video::Scene decode(std::string_view& in) {
    using video::codec_detail::get;
    video::Scene v;
    get(v.index, in), get(v.first_frame, in), get(v.last_frame, in);
    get(v.start_seconds, in), get(v.end_seconds, in), get(v.cut_score, in);
    get(v.pts, in), get(v.time_base, in), get(v.stream_start, in);
    return v;
  }
};

template <>
struct rayorch::Codec<video::FrameRef> {
  template <ByteSink S>
  static void encode(const video::FrameRef& v, S& out) {
    using video::codec_detail::put;
    put(v.scene, out), put(v.frame, out), put(v.pts, out), put(v.seconds, out);
  }
  static video::FrameRef decode(std::string_view& in) {
    using video::codec_detail::get;
    video::FrameRef v;
    get(v.scene, in), get(v.frame, in), get(v.pts, in), get(v.seconds, in);
    return v;
  }
};

template <>
struct rayorch::Codec<video::FrameImage> {
  template <ByteSink S>
  static void encode(const video::FrameImage& v, S& out) {
    using video::codec_detail::put;
    put(v.frame, out), put(v.width, out), put(v.height, out);
    put(static_cast<std::uint64_t>(v.pixels.size()), out);
    out.append(reinterpret_cast<const char*>(v.pixels.data()), v.pixels.size());
  }
  static video::FrameImage decode(std::string_view& in) {
    using video::codec_detail::get;
    video::FrameImage v;
    get(v.frame, in), get(v.width, in), get(v.height, in);
    const std::string_view bytes =
        detail::take_bytes(in, detail::get_length(in, 1), "the pixels of a FrameImage");
    v.pixels.assign(bytes.begin(), bytes.end());
    return v;
  }
};

template <>
struct rayorch::Codec<video::SceneFrame> {
  template <ByteSink S>
  static void encode(const video::SceneFrame& v, S& out) {
    using video::codec_detail::put;
    put(v.frame, out), put(v.seconds, out), put(v.text, out), put(v.signature, out);
    put(v.near_duplicate, out), put(v.duplicate_of, out);
  }
  static video::SceneFrame decode(std::string_view& in) {
    using video::codec_detail::get;
    video::SceneFrame v;
    get(v.frame, in), get(v.seconds, in), get(v.text, in), get(v.signature, in);
    get(v.near_duplicate, in), get(v.duplicate_of, in);
    return v;
  }
};

template <>
struct rayorch::Codec<video::SceneRecord> {
  template <ByteSink S>
  static void encode(const video::SceneRecord& v, S& out) {
    using video::codec_detail::put;
    put(v.index, out), put(v.first_frame, out), put(v.last_frame, out);
    put(v.start_seconds, out), put(v.end_seconds, out), put(v.cut_score, out);
    put(v.text, out), put(v.signature, out), put(v.near_duplicates, out), put(v.frames, out);
  }
  static video::SceneRecord decode(std::string_view& in) {
    using video::codec_detail::get;
    video::SceneRecord v;
    get(v.index, in), get(v.first_frame, in), get(v.last_frame, in);
    get(v.start_seconds, in), get(v.end_seconds, in), get(v.cut_score, in);
    get(v.text, in), get(v.signature, in), get(v.near_duplicates, in), get(v.frames, in);
    return v;
  }
};
