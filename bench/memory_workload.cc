// The workload of `rayorch bench memory` (memory_workload.h): the payload counters, the
// frames' pseudo-random bytes and checksums, the UDFs' run methods and the direct computation.
#include "memory_workload.h"

#include <algorithm>
#include <cstring>
#include <span>

namespace rayorch::bench::memory_workload {

std::atomic<std::int64_t> g_frame_bytes{0};
std::atomic<std::int64_t> g_frame_bytes_peak{0};
std::atomic<std::int64_t> g_decoded{0};
std::atomic<std::int64_t> g_summarising{0};
std::atomic<std::int64_t> g_queued_peak{0};

namespace {

void raise_peak(std::atomic<std::int64_t>& peak, std::int64_t value) {
  std::int64_t seen = peak.load(std::memory_order_relaxed);
  while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Pseudo-random bytes so that no page of a payload is shared or compressible by the kernel.
void fill_frame(FrameRef f, std::span<std::uint8_t> out) {
  std::uint64_t state = (static_cast<std::uint64_t>(f.video) << 32) | f.frame;
  for (std::size_t i = 0; i < out.size(); i += sizeof(std::uint64_t)) {
    const std::uint64_t w = splitmix64(state);
    std::memcpy(out.data() + i, &w, std::min(sizeof w, out.size() - i));
  }
}

Summary summarise_bytes(std::span<const std::uint8_t> bytes) {
  Summary s;
  std::size_t i = 0;
  for (; i + sizeof(std::uint64_t) <= bytes.size(); i += sizeof(std::uint64_t)) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i, sizeof w);
    s.sum += w;
    s.hash = (s.hash ^ w) * kFnvPrime;
  }
  for (; i < bytes.size(); ++i) {
    s.sum += bytes[i];
    s.hash = (s.hash ^ bytes[i]) * kFnvPrime;
  }
  return s;
}

// Order-sensitive, so a summary gathered into the wrong position changes the result.
void fold_into(Fingerprint& f, const Summary& s) {
  ++f.frames;
  f.sum += s.sum;
  f.hash = (f.hash ^ s.hash) * kFnvPrime;
}

}  // namespace

void count_frame_bytes(std::int64_t delta) {
  if (delta == 0) return;
  const std::int64_t now = g_frame_bytes.fetch_add(delta, std::memory_order_relaxed) + delta;
  raise_peak(g_frame_bytes_peak, now);
}

std::vector<std::vector<FrameRef>> ListFrames::run(ro::Column<int> videos) {
  std::vector<std::vector<FrameRef>> out(videos.size());
  for (std::size_t i = 0; i < videos.size(); ++i) {
    out[i].resize(children);
    for (std::size_t k = 0; k < children; ++k)
      out[i][k] = FrameRef{static_cast<std::uint32_t>(videos[i]), static_cast<std::uint32_t>(k)};
  }
  return out;
}

std::vector<Frame> DecodeFrame::run(ro::Column<FrameRef> refs) {
  std::vector<Frame> out;
  out.reserve(refs.size());
  for (const FrameRef& r : refs) {
    std::vector<std::uint8_t> b(bytes);
    fill_frame(r, b);
    out.emplace_back(std::move(b));
  }
  const std::int64_t decoded =
      g_decoded.fetch_add(static_cast<std::int64_t>(refs.size()), std::memory_order_relaxed) +
      static_cast<std::int64_t>(refs.size());
  raise_peak(g_queued_peak, decoded - g_summarising.load(std::memory_order_relaxed));
  return out;
}

std::vector<Summary> SummariseFrame::run(ro::Column<Frame> frames) {
  g_summarising.fetch_add(static_cast<std::int64_t>(frames.size()), std::memory_order_relaxed);
  std::vector<Summary> out;
  out.reserve(frames.size());
  for (const Frame& f : frames) out.push_back(summarise_bytes(f.bytes));
  return out;
}

std::vector<Fingerprint> FoldVideo::run(ro::Column<ro::Group<Summary>> videos) {
  std::vector<Fingerprint> out(videos.size());
  for (std::size_t i = 0; i < videos.size(); ++i) {
    for (const Summary& s : videos[i]) fold_into(out[i], s);
  }
  return out;
}

Fingerprint direct_fingerprint(int video, const MemoryOptions& o, std::vector<std::uint8_t>& buf) {
  Fingerprint f;
  for (std::size_t k = 0; k < o.children; ++k) {
    fill_frame(FrameRef{static_cast<std::uint32_t>(video), static_cast<std::uint32_t>(k)}, buf);
    fold_into(f, summarise_bytes(buf));
  }
  return f;
}

}  // namespace rayorch::bench::memory_workload
