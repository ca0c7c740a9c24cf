// The tail split (DESIGN 6.1.8): how the last work of a pool is cut into calls so that its
// actors finish together. While more work can reach a pool, an idle actor takes a full batch.
// Once nothing more can (the lineage knows: no source row left to admit, nothing upstream
// unsealed), full batches leave a ragged last round: whichever actor is free first takes a
// whole batch and the others idle while it runs, and the run ends up to one whole call after
// the first of them is free. Instead, once the READY work fits one more call per actor, an
// idle actor takes its part of a plan: from the pool's measured cost of a call (a fixed part
// plus a part per Grain, fitted over its finished calls) and when each busy actor will be free,
// the earliest common end by which the actors, in calls of at most a batch each, finish the
// READY work; an actor free too late to help takes nothing more. An actor that became ready
// late is kept busy to the end (kTailIdleShare), over every round left if need be. The idle actor
// asking is always the earliest free, so it always takes at least one Grain: nothing waits on the
// plan. The plan is made again at every dispatch, so a wrong estimate costs an uneven last round,
// never a Grain.
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

/// An actor that became ready a whole call or more after the pool's first idles at the end for
/// at most this share of its time from its readiness to the end (at least
/// kMinTailGainSeconds), when keeping it busy moves the plan's end by at most one call's fixed
/// part spread over the pool's actors: whole calls would otherwise leave it idle for up to one
/// fixed part of its short time, while the others can take what it gives up.
inline constexpr double kTailIdleShare = 0.05;

/// A late actor is kept busy by a plan over at most this many rounds of full batches left (a
/// round: one full call per ready actor); before that, full batches. The plan is remade at
/// every dispatch, and its last rounds decide how the actors end.
inline constexpr std::size_t kMaxPlannedRounds = 8;

/// One ready actor of a pool, as the plan sees it.
struct TailActor {
  double free_in_s = 0.0;    ///< seconds until it is free (0: idle)
  double ready_for_s = 0.0;  ///< seconds since it became ready
};

/// How many of `remaining` READY Grains the idle `actors.front()` takes now, given the pool's
/// other ready actors and its `batch_size`. `batch_size` while more than one call per actor is
/// left, unless full batches would leave a late actor idle too long (kTailIdleShare), and when
/// the plan would not end at least kMinTailGainSeconds earlier than full batches (each actor
/// free in turn taking up to batch_size) nor keep a late actor busy. Otherwise this actor's
/// part of the plan, over the calls the plan gives it, evenly: at least 1, at most
/// `remaining`.
std::size_t tail_share(const CallCost& cost, std::span<const TailActor> actors,
                       std::size_t remaining, std::size_t batch_size);

}  // namespace rayorch::detail
