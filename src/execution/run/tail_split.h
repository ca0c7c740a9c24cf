// The tail split (DESIGN 6.1): how the last work of a pool is cut into calls so that its
// actors finish together. While more work can reach a pool, an idle actor takes a full batch.
// Once nothing more can (the lineage knows: no source row left to admit, nothing upstream
// unsealed) and the READY Grains left fit in one more call per actor, a full batch for
// whichever actor is idle first leaves the others idle while the last calls run, and the run
// ends one whole call after the first of them is free. Instead the idle actor takes its share
// of a plan in which every actor that can help ends at the same time: from the pool's measured
// cost of a call (a fixed part plus a part per Grain, fitted over its finished calls) and when
// each busy actor will be free, the earliest-free actors are filled, like water, up to a common
// end; an actor free too late to help takes nothing more. The idle actor asking is always the
// earliest free, so it always takes at least one Grain: nothing waits on the plan. The plan is
// made again at every dispatch, so a wrong estimate costs one uneven last round, never a Grain.
//
// Pure logic: the driver (execution/driver.cc) feeds it the pool's calls and its actors' states;
// a unit test drives it without clocks.
//
// Threading: one model per pool, used on the driver's thread.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

namespace rayorch::detail {

/// What one call of a pool costs: `fixed_s + per_grain_s * grains` seconds.
struct CallCost {
  double fixed_s = 0.0;
  double per_grain_s = 0.0;
};

/// The least-squares line of call time over Grains per call, over the calls added so far.
class CallCostModel {
 public:
  /// A finished (accepted) call of `grains` Grains that took `seconds`.
  void add(std::size_t grains, double seconds);
  /// The fitted cost, once calls of at least two sizes were seen and the fit is usable: a
  /// per-Grain cost above 0 (a negative fixed part, from noise, counts as 0). nullopt
  /// otherwise: then no plan is made and actors take full batches.
  std::optional<CallCost> cost() const;

 private:
  // Running sums of the fit (invariant: count_ calls added).
  double count_ = 0.0;
  double sum_n_ = 0.0;
  double sum_nn_ = 0.0;
  double sum_s_ = 0.0;
  double sum_ns_ = 0.0;
};

/// Below this gain of the plan's end over full batches the plan is not used: calls of a few
/// milliseconds are not worth cutting, and their batches stay as they were.
inline constexpr double kMinTailGainSeconds = 0.1;

/// How many of `remaining` READY Grains an actor free now takes, given `others_free_in_s`, the
/// seconds until each other ready actor of the pool is free (0 for an idle one), and the
/// pool's `batch_size`. `batch_size` when the work left is more than one call per actor can
/// take, or when the plan would not end at least kMinTailGainSeconds earlier than full batches
/// (each actor free in turn taking up to batch_size). Otherwise the actor's share of the plan
/// described above: at least 1, at most `remaining`.
std::size_t tail_share(const CallCost& cost, std::span<const double> others_free_in_s,
                       std::size_t remaining, std::size_t batch_size);

}  // namespace rayorch::detail
