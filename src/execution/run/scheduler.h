// Which READY work an idle slot gets: the lowest admitted input batch first, a pool's
// Calls round-robin, held back by the consumers' backlog (RunOptions::backpressure) and, for
// a Call with a batch_wait, while a fuller batch may still arrive.
//
// Threading: the driver thread only.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "rayorch/run_options.h"

#include "execution/invoke.h"
#include "program/plan.h"
#include "runtime/engine.h"

namespace rayorch::detail {

class Scheduler {
 public:
  using Clock = std::chrono::steady_clock;

  Scheduler(std::shared_ptr<const RuntimePlan> plan, const RunOptions& options);

  /// Reserves work for `pool` from `active` (the admitted batches, lowest first). With
  /// `may_wait` (another RPC is running), a Call with a batch_wait may hold back a batch
  /// smaller than batch_size while its upstream is unsealed, up to that wait. `max_ready`
  /// above 0 caps the READY Grains taken (Engine::reserve).
  std::optional<Invocation> pick(int pool, bool may_wait,
                                 std::span<const std::unique_ptr<Engine>> active,
                                 std::size_t max_ready = 0);
  /// When the earliest batch_wait hold expires (time_point::max() when none is held).
  Clock::time_point next_hold_deadline() const;

 private:
  // A consumer of `call` has a READY backlog at its limit in `active`.
  bool held_back(int call, std::span<const std::unique_ptr<Engine>> active) const;
  // `call` waits for a fuller batch in `e` (starting its hold at `now`).
  bool wait_for_batch(const Engine& e, int call, Clock::time_point now);

  std::shared_ptr<const RuntimePlan> plan_;
  bool backpressure_ = false;
  std::vector<std::size_t> rr_;  // round-robin cursor per pool
  // Per co-located pool: its Calls that read an output of a Call of the same pool, in order.
  std::vector<std::vector<int>> readers_;
  // Per Call: how many READY Grains of it hold its producers back.
  std::vector<std::size_t> backlog_limit_;
  // Per Call: since when a small batch has been held back for batch_wait (max(): not held).
  std::vector<Clock::time_point> hold_since_;
};

}  // namespace rayorch::detail
