// The workload of `rayorch bench memory` (memory_bench.cc describes it): a fan-out whose
// children carry large payloads, the counters of the payload it holds, and the value of one
// source computed without the engine.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "bench.h"

namespace rayorch::bench::memory_workload {

inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull;
inline constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;

/// A child descriptor: which frame of which source.
struct FrameRef {
  std::uint32_t video = 0;
  std::uint32_t frame = 0;
};

// Bytes held by live Frames in this process and their high-water mark: the payload the
// engine actually keeps, without the allocator's slack that RSS also counts.
extern std::atomic<std::int64_t> g_frame_bytes;
extern std::atomic<std::int64_t> g_frame_bytes_peak;
// Frames decoded, and frames handed to summarise: their difference is the payload queued
// between the two stages, whatever the engine's release policy.
extern std::atomic<std::int64_t> g_decoded;
extern std::atomic<std::int64_t> g_summarising;
extern std::atomic<std::int64_t> g_queued_peak;

/// Adds `delta` bytes to g_frame_bytes and raises g_frame_bytes_peak to match.
void count_frame_bytes(std::int64_t delta);

/// A decoded frame. Every copy and destruction is counted, so copies the engine makes
/// show up as payload too.
struct Frame {
  Frame() = default;
  explicit Frame(std::vector<std::uint8_t> b) : bytes(std::move(b)) { count_frame_bytes(held()); }
  Frame(const Frame& o) : bytes(o.bytes) { count_frame_bytes(held()); }
  Frame(Frame&& o) noexcept : bytes(std::exchange(o.bytes, {})) {}
  Frame& operator=(const Frame& o) {
    if (this != &o) {
      count_frame_bytes(-held());
      bytes = o.bytes;
      count_frame_bytes(held());
    }
    return *this;
  }
  Frame& operator=(Frame&& o) noexcept {
    if (this != &o) {
      count_frame_bytes(-held());
      bytes = std::exchange(o.bytes, {});
    }
    return *this;
  }
  ~Frame() { count_frame_bytes(-held()); }

  std::int64_t held() const { return static_cast<std::int64_t>(bytes.size()); }

  std::vector<std::uint8_t> bytes;
};

/// Two checksums of a frame's bytes.
struct Summary {
  std::uint64_t sum = 0;
  std::uint64_t hash = kFnvOffset;
};
static_assert(sizeof(Summary) == 16);

/// One value per source: its summaries folded in frame order.
struct Fingerprint {
  std::uint64_t frames = 0;
  std::uint64_t sum = 0;
  std::uint64_t hash = kFnvOffset;
  friend bool operator==(const Fingerprint&, const Fingerprint&) = default;
};

struct ListFrames {
  explicit ListFrames(std::size_t n) : children(n) {}
  std::vector<std::vector<FrameRef>> run(ro::Column<int> videos);
  std::size_t children;
};

struct DecodeFrame {
  explicit DecodeFrame(std::size_t b) : bytes(b) {}
  std::vector<Frame> run(ro::Column<FrameRef> refs);
  std::size_t bytes;
};

struct SummariseFrame {
  std::vector<Summary> run(ro::Column<Frame> frames);
};

struct FoldVideo {
  std::vector<Fingerprint> run(ro::Column<ro::Group<Summary>> videos);
};

struct MemoryPipeline : ro::Pipeline {
  explicit MemoryPipeline(const MemoryOptions& o)
      : list(ro::Module<ListFrames>(o.children)),
        decode(ro::Module<DecodeFrame>(o.payload_kib * 1024)
                   .replicas(o.decode_replicas)
                   .batch_size(o.decode_batch)),
        summarise(
            ro::Module<SummariseFrame>().replicas(o.summary_replicas).batch_size(o.summary_batch)) {
  }
  ro::Module<ListFrames> list;
  ro::Module<DecodeFrame> decode;
  ro::Module<SummariseFrame> summarise;
  ro::Module<FoldVideo> fold;
  ro::Port<Fingerprint> forward(ro::Port<int> video) {
    return fold(ro::F::reduce(summarise(decode(ro::F::expand(list(video))))));
  }
};

// The value of one source computed without the engine, one frame at a time.
Fingerprint direct_fingerprint(int video, const MemoryOptions& o, std::vector<std::uint8_t>& buf);

}  // namespace rayorch::bench::memory_workload
