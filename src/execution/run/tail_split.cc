// The tail split. See tail_split.h.
#include "execution/run/tail_split.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

namespace rayorch::detail {

void CallCostModel::add(std::size_t grains, double seconds) {
  const double n = static_cast<double>(grains);
  count_ += 1.0;
  sum_n_ += n;
  sum_nn_ += n * n;
  sum_s_ += seconds;
  sum_ns_ += n * seconds;
}

std::optional<CallCost> CallCostModel::cost() const {
  if (count_ < 2.0) return std::nullopt;
  const double mean_n = sum_n_ / count_;
  const double mean_s = sum_s_ / count_;
  const double sxx = sum_nn_ - count_ * mean_n * mean_n;
  // Every call the same size (up to rounding): the fixed part cannot be told apart.
  if (sxx <= 1e-9 * sum_nn_) return std::nullopt;
  const double per_grain = (sum_ns_ - count_ * mean_n * mean_s) / sxx;
  if (!(per_grain > 0.0)) return std::nullopt;
  return CallCost{std::max(0.0, mean_s - per_grain * mean_n), per_grain};
}

namespace {

// Rounding slack of the plan's arithmetic, in Grains and in seconds.
constexpr double kEpsilon = 1e-9;

// What one actor does before a common end: its Grains and calls.
struct Part {
  double grains = 0.0;
  double calls = 0.0;
};

// The most Grains one actor can finish in `seconds` with calls of at most `batch` Grains:
// whole calls, then one partial call if its fixed part fits in what is left. With
// `idle_allowed_s` below that leftover and no partial call, the actor would idle longer than
// allowed at the end: it makes one call more instead, each smaller, ending with the others.
Part part(const CallCost& cost, std::size_t batch, double seconds, double idle_allowed_s) {
  if (seconds <= 0.0) return {};
  const double b = static_cast<double>(batch);
  const double full_call = cost.fixed_s + cost.per_grain_s * b;
  const double whole = std::floor(seconds / full_call + kEpsilon);
  const double left = seconds - whole * full_call;
  if (left >= cost.fixed_s + cost.per_grain_s) {
    const double partial =
        std::min(b, std::floor((left - cost.fixed_s) / cost.per_grain_s + kEpsilon));
    return {whole * b + partial, whole + 1.0};
  }
  if (whole == 0.0 || left <= idle_allowed_s) return {whole * b, whole};
  // whole + 1 calls filling `seconds`: fewer Grains than whole full calls.
  const double calls = whole + 1.0;
  const double grains = std::floor((seconds - calls * cost.fixed_s) / cost.per_grain_s + kEpsilon);
  return grains >= calls ? Part{grains, calls} : Part{whole * b, whole};
}

// When each actor's last call ends if every actor, in the order it is free, takes up to
// `batch` (its free time if it takes nothing).
std::vector<double> full_batches_ends(const CallCost& cost, const std::vector<double>& free_at,
                                      std::size_t remaining, std::size_t batch) {
  using Free = std::pair<double, std::size_t>;  // (free at, actor)
  std::priority_queue<Free, std::vector<Free>, std::greater<>> queue;
  for (std::size_t a = 0; a < free_at.size(); ++a) queue.emplace(free_at[a], a);
  std::vector<double> ends = free_at;
  while (remaining > 0) {
    const auto [now, actor] = queue.top();
    queue.pop();
    const std::size_t n = std::min(batch, remaining);
    remaining -= n;
    ends[actor] = now + cost.fixed_s + cost.per_grain_s * static_cast<double>(n);
    queue.emplace(ends[actor], actor);
  }
  return ends;
}

}  // namespace

std::size_t tail_share(const CallCost& cost, std::span<const TailActor> actors,
                       std::size_t remaining, std::size_t batch_size) {
  if (actors.empty() || remaining == 0 || batch_size <= 1 || !(cost.per_grain_s > 0.0))
    return batch_size;
  // Only an actor that became ready a whole call or more after the pool's first is kept
  // busy: actors ready together share one window, and full batches serve them as before.
  double first_ready_for_s = 0.0;
  for (const TailActor& a : actors) first_ready_for_s = std::max(first_ready_for_s, a.ready_for_s);
  const double full_call_s = cost.fixed_s + cost.per_grain_s * static_cast<double>(batch_size);
  auto late = [&](const TailActor& a) { return a.ready_for_s + full_call_s <= first_ready_for_s; };
  // Cheap before the last rounds: the plan's work grows with the rounds left, and it is made
  // at every dispatch.
  const std::size_t round = batch_size * actors.size();
  const std::size_t rounds_left = (remaining + round - 1) / round;
  if (rounds_left > 1 &&
      (rounds_left > kMaxPlannedRounds || std::none_of(actors.begin(), actors.end(), late)))
    return batch_size;
  std::vector<double> free_at;  // this actor's first: 0
  for (const TailActor& a : actors)
    free_at.push_back(&a == &actors.front() ? 0.0 : std::max(0.0, a.free_in_s));
  const std::vector<double> full_ends = full_batches_ends(cost, free_at, remaining, batch_size);
  const double full_end = *std::max_element(full_ends.begin(), full_ends.end());
  const double need = static_cast<double>(remaining);
  auto idle_allowed_s = [&](std::size_t a, double end, bool keep_busy) {
    if (!keep_busy || !late(actors[a])) return std::numeric_limits<double>::infinity();
    return std::max(kMinTailGainSeconds, kTailIdleShare * (actors[a].ready_for_s + end));
  };
  // Whether the actors' parts cover the work by `end`; `keep_busy`: each idle at the end for
  // at most kTailIdleShare of its time from its readiness to `end`, where it can.
  auto covers = [&](double end, bool keep_busy) {
    double total = 0.0;
    for (std::size_t a = 0; a < actors.size(); ++a)
      total += part(cost, batch_size, end - free_at[a], idle_allowed_s(a, end, keep_busy)).grains;
    return total + kEpsilon >= need;
  };
  // The earliest common end by which the actors' capacities cover the work. Capacity grows
  // with the end, and full batches are one schedule that meets full_end, so the search lies
  // in [0, full_end].
  double low = 0.0;
  double high = full_end + kEpsilon;
  if (!covers(high, false)) return batch_size;  // only from rounding; full batches are safe
  for (int step = 0; step < 60 && high - low > 1e-6; ++step) {
    const double mid = 0.5 * (low + high);
    (covers(mid, false) ? high : low) = mid;
  }
  // Keeping an actor busy to the end costs the Grains it gives up, which the others take:
  // at most one call's fixed part spread over the pool. The first end, one Grain's time
  // apart, that covers the work so, if any.
  std::optional<double> busy_end;
  const double latest = high + cost.fixed_s / static_cast<double>(actors.size());
  for (double t = high; t <= latest; t += cost.per_grain_s) {
    if (covers(t, true)) {
      busy_end = t;
      break;
    }
  }
  bool full_batches_idle_too_long = false;
  for (std::size_t a = 0; a < actors.size(); ++a)
    full_batches_idle_too_long |= full_end - full_ends[a] > idle_allowed_s(a, full_end, true);
  // A call in flight ends when it ends, whatever the plan.
  const double in_flight_end = *std::max_element(free_at.begin(), free_at.end());
  auto gains = [&](double plan_end) {
    return full_end - std::max(plan_end, in_flight_end) >= kMinTailGainSeconds;
  };
  // Cutting calls before the last round moves the end no earlier on average, but has many
  // parents finish this pool together, to queue downstream at the end: only an actor left
  // idle too long justifies it.
  const bool last_round = rounds_left == 1;
  double end = high;
  bool keep_busy = false;
  if (busy_end && (full_batches_idle_too_long || (last_round && gains(*busy_end)))) {
    end = *busy_end;
    keep_busy = true;
  } else if (!last_round || !gains(high)) {
    return batch_size;
  }
  // This actor's part of the plan, over as many calls as the plan gives it, evenly: its calls
  // take the same time in any order, and an even cut leaves the most room for the next plan.
  const Part mine = part(cost, batch_size, end, idle_allowed_s(0, end, keep_busy));
  if (mine.calls < 1.0) return 1;  // this actor is free first: the others cannot do better
  const double grains = std::min(need, mine.grains);
  const double calls = std::max(1.0, std::min(mine.calls, std::ceil(grains - kEpsilon)));
  const auto share = static_cast<std::size_t>(std::ceil(grains / calls - kEpsilon));
  return std::clamp<std::size_t>(share, 1, std::min(batch_size, remaining));
}

}  // namespace rayorch::detail
