// See live_model.h.
#include "execution/live/live_model.h"

#include <algorithm>

#include <fmt/format.h>

#include "rayorch/outcome.h"

namespace rayorch::detail {

void LiveModel::run_start(const RunStartEvent& e) {
  const std::lock_guard lock(mutex_);
  started_at_ = std::chrono::steady_clock::now();
  state_ = LiveSnapshot{};
  state_.started = true;
  state_.roots_total = e.rows + e.restored;
  state_.total_known = e.rows_known;
  state_.report.version = 1;
  call_pools_.assign(e.call_pools.begin(), e.call_pools.end());
  pool_actors_.assign(e.actors_per_pool.begin(), e.actors_per_pool.end());
  for (std::size_t i = 0; i < e.calls.size(); ++i) {
    ReportCall c;
    c.call = e.calls[i];
    if (i < e.call_batch_sizes.size()) {
      c.batch_size = static_cast<std::uint64_t>(e.call_batch_sizes[i]);
    }
    state_.report.calls.push_back(std::move(c));
  }
  for (std::size_t p = 0; p < e.pools.size(); ++p) {
    ReportPool pool;
    pool.pool = e.pools[p];
    pool.actors =
        p < e.actors_per_pool.size() ? static_cast<std::uint64_t>(e.actors_per_pool[p]) : 0;
    state_.report.pools.push_back(std::move(pool));
  }
}

void LiveModel::rpc(const RpcEvent& e) {
  const std::lock_guard lock(mutex_);
  if (e.call < 0 || static_cast<std::size_t>(e.call) >= state_.report.calls.size()) return;
  ReportCall& c = state_.report.calls[static_cast<std::size_t>(e.call)];
  c.rpcs += 1;
  c.grain_dispatches += e.rows;
  c.busy_seconds += e.end_seconds - e.start_seconds;
  if (e.status != "ok") c.failed_rpcs += 1;
  c.batch_size_histogram[e.rows] += 1;
}

void LiveModel::actor_start(const ActorStartEvent& e) {
  const std::lock_guard lock(mutex_);
  if (e.pool < 0 || static_cast<std::size_t>(e.pool) >= state_.report.pools.size()) return;
  state_.report.pools[static_cast<std::size_t>(e.pool)].starts.emplace_back(e.run_seconds,
                                                                            std::string(e.error));
}

void LiveModel::pool_resize(const PoolResizeEvent& e) {
  const std::lock_guard lock(mutex_);
  if (e.pool < 0 || static_cast<std::size_t>(e.pool) >= state_.report.pools.size()) return;
  ReportPool& p = state_.report.pools[static_cast<std::size_t>(e.pool)];
  if (p.actors_over_time.empty())
    p.actors_over_time.emplace_back(0.0, static_cast<std::uint64_t>(e.from));
  p.actors_over_time.emplace_back(e.run_seconds, static_cast<std::uint64_t>(e.to));
  p.resizes.push_back(
      fmt::format("{:.2f} s: {} -> {} ({})", e.run_seconds, e.from, e.to, e.reason));
  pool_actors_[static_cast<std::size_t>(e.pool)] = e.to;
}

void LiveModel::root(const RootEvent& e) {
  const std::lock_guard lock(mutex_);
  ReportModel& r = state_.report;
  r.roots_delivered += 1;
  r.roots_by_outcome[std::string(to_string(e.outcome))] += 1;
  if (e.restored) {
    r.roots_restored += 1;
    return;
  }
  if (e.outcome != Outcome::present) {
    add_failure(r.failures, e.call, to_string(e.outcome), e.cause, e.entity, e.row);
  }
  if (r.root_completed_seconds.size() <= e.row) r.root_completed_seconds.resize(e.row + 1, 0.0);
  // A root finishing at the very start still counts as finished (0 marks "not yet").
  r.root_completed_seconds[e.row] = std::max(e.seconds, 1e-9);
}

void LiveModel::progress(const ProgressEvent& e) {
  const std::lock_guard lock(mutex_);
  state_.roots_total = e.roots_total;
  state_.total_known = e.total_known;
  state_.calls.clear();
  for (const CallProgress& c : e.calls) {
    state_.calls.push_back({std::string(c.call), c.done, c.ready, c.in_flight});
  }
  state_.pools.clear();
  for (std::size_t p = 0; p < e.pools.size(); ++p) {
    const PoolProgress& pool = e.pools[p];
    state_.pools.push_back({std::string(pool.pool), pool.actors, pool.ready, pool.failed});
    if (p < pool_actors_.size() && pool_actors_[p] == 0) pool_actors_[p] = pool.actors;
  }
  if (e.final) state_.report.elapsed_seconds = e.elapsed_seconds;
}

void LiveModel::end(bool aborted, std::string_view error) {
  const std::lock_guard lock(mutex_);
  state_.ended = true;
  state_.report.aborted = aborted;
  state_.report.error = std::string(error);
  state_.report.elapsed_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at_).count();
}

LiveSnapshot LiveModel::snapshot() const {
  const std::lock_guard lock(mutex_);
  LiveSnapshot s = state_;
  if (s.started && !s.ended) {
    s.report.elapsed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_at_).count();
  }
  // What the JSON report derives at the end, derived now: a Call's actors are its pool's,
  // its batch fill the Grains it was sent over what its RPCs could hold.
  for (std::size_t i = 0; i < s.report.calls.size(); ++i) {
    ReportCall& c = s.report.calls[i];
    const int pool = i < call_pools_.size() ? call_pools_[i] : -1;
    if (pool >= 0 && static_cast<std::size_t>(pool) < pool_actors_.size()) {
      c.actors = static_cast<std::uint64_t>(pool_actors_[static_cast<std::size_t>(pool)]);
      c.udf = s.report.pools[static_cast<std::size_t>(pool)].pool;
    }
    c.mean_batch_fill =
        c.rpcs > 0 && c.batch_size > 0
            ? static_cast<double>(c.grain_dispatches) / static_cast<double>(c.rpcs * c.batch_size)
            : 0.0;
  }
  return s;
}

}  // namespace rayorch::detail
