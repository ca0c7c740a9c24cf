// The driver's side of the tail split (execution/run/tail_split.h): what each ready actor of a
// pool is doing, turned into the seconds until it is free. See driver.h.
#include <algorithm>
#include <vector>

#include "execution/driver.h"

namespace rayorch::detail {

std::size_t Driver::tail_cap(const RunState& state, std::size_t pool, std::size_t slot) const {
  const PoolState& pool_state = pool_states_[pool];
  if (!pool_state.one_slot_per_actor()) return 0;
  std::size_t batch_size = 0;
  for (int call : plan_->pools[pool].calls)
    batch_size = std::max(batch_size, static_cast<std::size_t>(plan_->calls[call].batch_size));
  if (batch_size <= 1) return 0;
  const auto cost = pool_state.call_cost().cost();
  if (!cost) return 0;
  // Cheap before the tail: the lineage says whether more work can still reach the pool.
  const RunState::PoolBacklog backlog = state.backlog(static_cast<int>(pool));
  if (backlog.more_can_arrive || backlog.ready == 0) return 0;
  const auto now = Clock::now();
  auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  auto ready_for_s = [&](std::size_t s) {
    const int actor = pools_->actor_of(static_cast<int>(pool), static_cast<int>(s));
    return std::max(0.0, seconds(now - pool_state.ready_at(actor)));
  };
  std::vector<TailActor> actors{{.free_in_s = 0.0, .ready_for_s = ready_for_s(slot)}};
  for (std::size_t s = 0; s < slots_[pool].size(); ++s) {
    if (s == slot || !takes_tasks(pool, s)) continue;
    const Slot& w = slots_[pool][s];
    double free_in_s = 0.0;
    if (w.current) {
      const double grains = static_cast<double>(w.current->grains.size());
      free_in_s =
          std::max(0.0, cost->fixed_s + cost->per_grain_s * grains - seconds(now - w.dispatched));
    }
    actors.push_back({.free_in_s = free_in_s, .ready_for_s = ready_for_s(s)});
  }
  return tail_share(*cost, actors, static_cast<std::size_t>(backlog.ready), batch_size);
}

}  // namespace rayorch::detail
