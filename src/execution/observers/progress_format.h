// The text of the progress display (progress_line.cc): where a run stands, per Call, fitted
// to a width. Pure functions of a ProgressEvent, so that what a user sees is tested without a
// terminal or a clock.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "rayorch/observer.h"

namespace rayorch::detail {

/// The Call that bounds the run: the one that kept its pool's actors busiest so far
/// (CallProgress::busy_share, the report's verdict read live); none before an RPC ended.
/// Ties go to the later Call in plan order (the deeper stage). Grains waiting are no sign:
/// a producer held back by backpressure has many, and bounds nothing.
std::optional<std::size_t> bottleneck_call(std::span<const CallProgress> calls);

/// "M:SS", or "H:MM:SS" from an hour on; negative or non-finite seconds read "?".
std::string format_duration(double seconds);

/// One line of progress for `e`, of at most `width` characters (0: no limit), without a
/// newline: roots done of the total, the rate of the roots this run computed (roots restored
/// from the run journal count as done, not in the rate), the time
/// left at that rate, pools still starting, and per Call its Grains done, queued (waiting for
/// a worker) and in flight and its busy share, the bottleneck Call (bottleneck_call) marked
/// with a leading '*'.
/// When the full text does not fit it is abbreviated, in this order, until it does: short
/// labels, Call and pool names cut, idle Calls folded into a count ("+2"), every Call but the
/// bottleneck and the starting pools folded, and last the text cut with "...": the roots,
/// the rate and the bottleneck go last.
std::string format_progress(const ProgressEvent& e, std::size_t width);

}  // namespace rayorch::detail
