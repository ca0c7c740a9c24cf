// Values read in place from a frame: the worker of a process-isolated pool may hand its UDF
// input values that point into the memory it shares with the executor instead of copies of
// them (DESIGN 6.2; docs/ISOLATION.md). That memory is written again by the next frame, so a
// decoder that reads in place registers a settle step, and the worker runs every step after
// the call and before its answer lets the executor write again. A step leaves no value
// pointing into the frame's memory: the pages of a value still referenced then (a UDF kept
// it) are moved out of the frame with keep(), to private memory at the same address, so every
// pointer to the value stays valid and reads the same bytes.
//
// Threading: one worker thread makes, settles and drops an InPlaceReads; steps take what they
// need themselves (the GIL).
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace rayorch::detail {

class InPlaceReads {
 public:
  /// Nothing may be read in place (the frame is not in shared memory).
  InPlaceReads() = default;
  /// The frame's payload, in memory that the next frame overwrites.
  explicit InPlaceReads(std::string_view frame) : frame_(frame), enabled_(true) {}
  InPlaceReads(const InPlaceReads&) = delete;
  InPlaceReads& operator=(const InPlaceReads&) = delete;

  /// Bytes of a page: keep() moves whole pages, so a value read in place starts on one.
  static std::size_t page_size() noexcept;
  /// True when `bytes` may be read in place: they lie in the frame and start on a page.
  bool can_read_in_place(std::string_view bytes) const noexcept;
  /// Registers a step for settle().
  void on_settle(std::function<void(InPlaceReads&)> step) { steps_.push_back(std::move(step)); }
  /// True when some decoder read in place (the answer must then not overwrite the frame).
  bool used() const noexcept { return !steps_.empty(); }

  /// For a settle step: moves the pages of `bytes` (read in place) out of the frame into
  /// private, read-only memory at the same address, in one step for every reader (mremap),
  /// and records them in kept(). From then on the caller owns those pages and gives them
  /// back with release_kept(bytes). False when there is no memory for them (nothing moved).
  bool keep(std::string_view bytes);
  /// Unmaps the pages keep() moved for `bytes`.
  static void release_kept(std::string_view bytes) noexcept;

  /// Runs every step once, in order; false when one of them could not keep a value (no
  /// memory): the worker must then end, since a value would point into a frame about to
  /// be overwritten.
  bool settle();
  /// The page ranges keep() moved: the frame's mapping no longer holds them
  /// (SharedArena::unpin).
  const std::vector<std::pair<char*, std::size_t>>& kept() const noexcept { return kept_; }

 private:
  std::string_view frame_;
  bool enabled_ = false;
  bool failed_ = false;
  std::vector<std::function<void(InPlaceReads&)>> steps_;
  std::vector<std::pair<char*, std::size_t>> kept_;
};

}  // namespace rayorch::detail
