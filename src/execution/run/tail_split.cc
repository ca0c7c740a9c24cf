// The tail split. See tail_split.h.
#include "execution/run/tail_split.h"

#include <algorithm>
#include <cmath>
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

std::size_t tail_share(const CallCost& cost, std::span<const double> others_free_in_s,
                       std::size_t remaining, std::size_t batch_size) {
  const std::size_t actors = others_free_in_s.size() + 1;
  if (remaining == 0 || batch_size <= 1 || remaining > batch_size * actors) return batch_size;
  const double fixed = cost.fixed_s;
  const double per_grain = cost.per_grain_s;
  std::vector<double> free(others_free_in_s.begin(), others_free_in_s.end());
  for (double& f : free) f = std::max(0.0, f);
  std::sort(free.begin(), free.end());
  const double work = per_grain * static_cast<double>(remaining);
  // Water filling: this actor (free now) and the earliest others, while the next one can
  // start a call before the common end; `starts` sums their free times plus the fixed part.
  double starts = fixed;
  std::size_t filled = 1;
  double end = work + starts;
  while (filled - 1 < free.size() && free[filled - 1] + fixed < end) {
    starts += free[filled - 1] + fixed;
    ++filled;
    end = (work + starts) / static_cast<double>(filled);
  }
  const double share = (end - fixed) / per_grain;  // this actor's, the largest
  if (share >= static_cast<double>(batch_size)) return batch_size;
  const double planned_end = std::max(end, free.empty() ? 0.0 : free.back());
  // Full batches instead: each actor in turn of its free time takes up to batch_size.
  std::size_t left = remaining;
  double greedy_end = 0.0;
  auto take = [&](double free_at) {
    const std::size_t n = std::min(batch_size, left);
    left -= n;
    greedy_end = std::max(greedy_end,
                          n > 0 ? free_at + fixed + per_grain * static_cast<double>(n) : free_at);
  };
  take(0.0);
  for (double f : free) take(f);
  if (greedy_end - planned_end < kMinTailGainSeconds) return batch_size;
  const auto rounded = static_cast<std::size_t>(std::llround(std::max(1.0, share)));
  return std::min(rounded, remaining);
}

}  // namespace rayorch::detail
