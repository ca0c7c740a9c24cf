// The driver's side of self-sizing pools (DESIGN 6.1.7): it feeds the policy
// (execution/run/pool_sizing.h) with what the lineage and the measurements say, and applies
// its targets to the pools (WorkerPools::start_actor / retire_actor). An actor is retired only
// when ready and idle, so no Grain is ever taken from it. See driver.h.
#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "rayorch/errors.h"

#include "execution/driver.h"

namespace rayorch::detail {

void Driver::init_sizing() {
  const std::size_t n = pool_states_.size();
  sizing_ = pools_->resizable() && std::any_of(pool_states_.begin(), pool_states_.end(),
                                               [](const PoolState& p) { return p.sizes_itself(); });
  if (!sizing_) return;

  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  sizer_.emplace(resolve_budget(options_.budget, cpus), options_.sizing, n);
  std::vector<PoolDemand> pools(n);
  std::vector<int> actors(n, 0);
  for (std::size_t p = 0; p < n; ++p) {
    pools[p].name = plan_->pools[p].name;
    pools[p].per_actor = actor_resources(plan_->pools[p].options);
    // A self-sizing pool's actors start stopped (the pools start none of them).
    actors[p] = pool_states_[p].sizes_itself() ? plan_->pools[p].options.min_replicas
                                               : pool_states_[p].live();
  }
  Resources used;
  for (std::size_t p = 0; p < n; ++p) add_resources(used, pools[p].per_actor, actors[p]);
  // Every minimum must fit, and each pool's first actor beside the others' minimums: the
  // policy can then always give a pool with work an actor.
  for (std::size_t p = 0; p < n; ++p) {
    if (!pool_states_[p].sizes_itself()) continue;
    const int min = plan_->pools[p].options.min_replicas;
    Resources others = used;
    add_resources(others, pools[p].per_actor, -min);
    const int need = std::max(min, 1);
    if (sizer_->fitting(pools[p], others, need) == need) continue;
    std::vector<int> held = actors;
    held[p] = 0;
    close();
    throw ExecutionError(
        fmt::format("Module<{}> sizes itself with min_replicas={} but {} actor{} cannot fit in the "
                    "executor's resource budget: {}; raise the budget or lower min_replicas",
                    plan_->pools[p].name, min, need, need == 1 ? "" : "s",
                    sizer_->shortfall(pools, held, static_cast<int>(p), need)));
  }
  // First targets: the minimums, then one actor for each pool with none while the budget
  // holds, the pools that read the sources first (their actors let admission start).
  std::vector<std::size_t> order;
  for (int p : source_pools_) order.push_back(static_cast<std::size_t>(p));
  for (std::size_t p = 0; p < n; ++p) {
    if (std::find(order.begin(), order.end(), p) == order.end()) order.push_back(p);
  }
  for (std::size_t p : order) {
    if (!pool_states_[p].sizes_itself() || actors[p] > 0 || sizer_->fitting(pools[p], used, 1) == 0)
      continue;
    actors[p] = 1;
    add_resources(used, pools[p].per_actor, 1);
  }
  for (std::size_t p = 0; p < n; ++p) {
    if (pool_states_[p].sizes_itself()) apply_target(p, actors[p]);
  }
}

void Driver::begin_sizing(RunState& state) {
  for (std::size_t p = 0; p < pool_states_.size(); ++p) {
    if (pool_states_[p].sizes_itself())
      state.pool_size(static_cast<int>(p), pool_states_[p].target());
  }
  for (int sp : source_pools_) {
    const auto p = static_cast<std::size_t>(sp);
    if (!pool_states_[p].sizes_itself() || pool_states_[p].target() > 0) continue;
    // The budget is soft here: admission needs an actor of a Call that reads the sources.
    state.pool_resized(sp, 0, 1, "the run starts and it reads the sources", Clock::now());
    apply_target(p, 1);
  }
  next_resize_ = Clock::now();
}

PoolDemand Driver::demand(const RunState& state, std::size_t p) const {
  const ModuleOptions& o = plan_->pools[p].options;
  PoolDemand d;
  d.name = plan_->pools[p].name;
  const PoolState& pool = pool_states_[p];
  d.sizes_itself = pool.sizes_itself();
  d.min_replicas = o.min_replicas;
  d.max_replicas = pool.actors() - pool.count(ActorPhase::failed);
  d.per_actor = actor_resources(o);
  d.actors = pool.sizes_itself() ? pool.target() : pool.live();
  int batch = 1;
  for (int c : plan_->pools[p].calls)
    batch = std::max(batch, plan_->calls[static_cast<std::size_t>(c)].batch_size);
  d.batch_size = batch;
  for (const Slot& w : slots_[p]) {
    if (!w.current) continue;
    ++d.busy;
    d.in_flight += w.current->grains.size();
  }
  const RunState::PoolBacklog b = state.backlog(static_cast<int>(p));
  d.ready = b.ready;
  d.pending = b.unsealed > b.ready + d.in_flight ? b.unsealed - b.ready - d.in_flight : 0;
  d.more_can_arrive = b.more_can_arrive;
  if (pool.busy_seconds() > 0)
    d.grains_per_second = static_cast<double>(pool.grains_done()) / pool.busy_seconds();
  d.startup_seconds = pool.mean_startup_seconds().value_or(0.0);
  return d;
}

bool Driver::resize(RunState& state, bool force) {
  const auto now = Clock::now();
  if (!force && now < next_resize_) return false;
  next_resize_ = now + std::chrono::milliseconds(100);
  std::vector<PoolDemand> pools;
  pools.reserve(pool_states_.size());
  for (std::size_t p = 0; p < pool_states_.size(); ++p) pools.push_back(demand(state, p));
  bool started = false;
  const double seconds = std::chrono::duration<double>(now - created_).count();
  for (const SizingDecision& d : sizer_->decide(pools, seconds)) {
    state.pool_resized(d.pool, d.from, d.to, d.reason, now);
    if (apply_target(static_cast<std::size_t>(d.pool), d.to)) started = true;
  }
  return started;
}

bool Driver::apply_target(std::size_t p, int to) {
  PoolState& pool = pool_states_[p];
  pool.set_target(to);
  bool started = false;
  for (int a = 0; a < pool.actors() && pool.live() < to; ++a) {
    if (!pool.apply({.kind = ActorEvent::Kind::starting,
                     .pool = static_cast<int>(p),
                     .actor = a,
                     .at = Clock::now(),
                     .error = {}}))
      continue;
    pools_->start_actor(static_cast<int>(p), a);
    started = true;
  }
  // Idle ready actors above the target go now; busy or starting ones once idle and ready.
  for (std::size_t a = 0; a < slots_[p].size() && pool.live() > to; ++a) retire_surplus(p, a);
  return started;
}

bool Driver::retire_surplus(std::size_t p, std::size_t slot) {
  PoolState& pool = pool_states_[p];
  if (!pool.sizes_itself() || pool.live() <= pool.target() || slots_[p][slot].current) return false;
  // A self-sizing pool's slots are its actors (WorkerPools::resizable()).
  if (!pool.apply({.kind = ActorEvent::Kind::retired,
                   .pool = static_cast<int>(p),
                   .actor = static_cast<int>(slot),
                   .at = Clock::now(),
                   .error = {}}))
    return false;
  pools_->retire_actor(static_cast<int>(p), static_cast<int>(slot));
  return true;
}

}  // namespace rayorch::detail
