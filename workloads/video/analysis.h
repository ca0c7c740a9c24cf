// The arithmetic of the video workload, free of FFmpeg and of the engine so it can be tested
// on its own: frame differences, cuts, frame sampling, signatures and scene consensus.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "video/video.h"

namespace video {

/// Mean absolute difference of two equally sized gray images, 0..255.
double mean_abs_difference(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b);

/// Indices i (>= 1) where `differences[i]` (frame i against frame i-1; element 0 is unused)
/// exceeds `threshold`: the first frames of every scene but the first.
std::vector<std::size_t> cut_frames(std::span<const double> differences, double threshold);

/// Offsets (0-based, ascending, distinct) inside a scene of `frames` frames that `config`
/// samples. Throws std::invalid_argument unless exactly one mode is positive.
std::vector<std::uint64_t> sample_offsets(std::uint64_t frames, const SamplingConfig& config);

/// 64-bit difference hash: the image averaged down to 9x8 cells, one bit per horizontally
/// adjacent pair, set when the left cell is brighter. Robust to compression noise and
/// scaling, sensitive to layout.
std::uint64_t difference_hash(const FrameImage& image);

/// Number of differing bits.
int hamming_distance(std::uint64_t a, std::uint64_t b);

/// Tesseract output as one line: form feeds and runs of whitespace become single spaces,
/// ends trimmed.
std::string clean_text(std::string_view text);

/// Fills a scene record from its sampled frames (in frame order): consensus text,
/// representative signature, near-duplicate flags. Sizes must match.
SceneRecord summarize_scene(const Scene& scene, const std::vector<FrameRef>& frames,
                            const std::vector<std::string>& texts,
                            const std::vector<std::uint64_t>& signatures, int near_duplicate_bits);

/// "0x" followed by 16 lower-case hex digits, and back.
std::string signature_hex(std::uint64_t signature);
std::uint64_t parse_signature(std::string_view hex);

}  // namespace video
