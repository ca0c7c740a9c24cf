// The synthetic document workload: the one definition of its page values, payload sizes and
// simulated stage costs, shared by the benchmarks (bench/workload.h) and the simulated C++
// stages of the Python package (python/src/cpp_udfs.h). The Python peers of `rayorch bench
// compare` compute the same (bench/peers/common.py). Stage costs are sleeps, so that many
// simulated accelerators fit on a small machine:
//
//   render    one RPC per document, cost per page            -> the document's pages
//   ocr       one RPC per page batch, fixed cost + per page  -> one value per page
//   assemble  one RPC per document, fixed cost + per page    -> the ordered page values
//
// The OCR fixed cost per batch is what makes batching pay, as on a GPU. Header-only and free
// of everything but the standard library, so the Python extension needs no library for it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace synthetic {

/// Simulated stage costs in milliseconds.
struct Costs {
  double render_per_page = 0.5;
  double ocr_per_batch = 30.0;
  double ocr_per_page = 0.5;
  double assemble_per_doc = 2.0;
  double assemble_per_page = 0.02;
};

/// Rendering `pages` pages.
inline double render_ms(const Costs& c, double pages) {
  return pages * c.render_per_page;
}

/// One OCR call on a batch of `pages` pages.
inline double ocr_ms(const Costs& c, std::size_t pages) {
  return c.ocr_per_batch + static_cast<double>(pages) * c.ocr_per_page;
}

/// Assembling one document of `pages` pages.
inline double assemble_ms(const Costs& c, std::size_t pages) {
  return c.assemble_per_doc + static_cast<double>(pages) * c.assemble_per_page;
}

/// Sleeps for `ms` milliseconds (nothing when ms <= 0).
inline void simulate_ms(double ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

/// The simulated OCR result of page `page` of document `doc`.
constexpr std::int64_t page_value(std::int64_t doc, std::int64_t page) {
  return doc * 1000000 + page;
}

/// The payload regime: every page's OCR result carries a payload of its own size, so that
/// regrouping pages into documents moves real bytes. Sizes lie in [max_bytes / 16, max_bytes].
constexpr std::size_t page_payload_size(std::uint32_t doc, std::uint32_t page,
                                        std::size_t max_bytes) {
  const std::size_t lo = max_bytes / 16;
  return lo + (static_cast<std::size_t>(doc) * 7919u + static_cast<std::size_t>(page) * 104729u) %
                  (max_bytes - lo + 1);
}

}  // namespace synthetic
