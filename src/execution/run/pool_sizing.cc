// The sizing policy of self-sizing pools. See pool_sizing.h.
#include "execution/run/pool_sizing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

namespace rayorch::detail {
namespace {

constexpr double kSlack = 1e-9;  // budget sums of fractional resources

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return b == 0 ? a : (a + b - 1) / b;
}

// Every resource one actor of `d` needs, with its name as messages print it.
template <class Fn>
void for_each_need(const Resources& per, Fn fn) {
  if (per.cpus > 0) fn("CPU", per.cpus);
  if (per.gpus > 0) fn("GPU", per.gpus);
  for (const auto& [name, amount] : per.named) {
    if (amount > 0) fn(name, amount);
  }
}

double amount_of(const Resources& r, const std::string& name) {
  if (name == "CPU") return r.cpus;
  if (name == "GPU") return r.gpus;
  auto it = r.named.find(name);
  return it == r.named.end() ? 0.0 : it->second;
}

}  // namespace

void add_resources(Resources& to, const Resources& per, int times) {
  to.cpus += per.cpus * times;
  to.gpus += per.gpus * times;
  for (const auto& [name, amount] : per.named) to.named[name] += amount * times;
}

namespace {

std::string fmt_amount(double v) {
  return std::abs(v - std::round(v)) < kSlack ? fmt::format("{}", std::llround(v))
                                              : fmt::format("{:.2f}", v);
}

std::string describe(const Resources& per) {
  std::string s;
  for_each_need(per, [&](const std::string& name, double amount) {
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", fmt_amount(amount), name);
  });
  return s.empty() ? "no resources" : s;
}

}  // namespace

Resources resolve_budget(const ResourceBudget& budget, int machine_cpus) {
  Resources r;
  r.cpus = budget.cpus > 0 ? budget.cpus : static_cast<double>(std::max(machine_cpus, 1));
  r.gpus = budget.gpus;
  r.named = budget.resources;
  return r;
}

Resources actor_resources(const ModuleOptions& options) {
  return Resources{.cpus = options.cpus, .gpus = options.gpus, .named = options.resources};
}

PoolSizer::PoolSizer(Resources budget, SizingConfig config, std::size_t pools)
    : budget_(std::move(budget)),
      config_(config),
      changed_at_(pools, -std::numeric_limits<double>::infinity()),
      below_since_(pools, -1.0),
      refused_(pools),
      random_(config.random_seed) {}

int PoolSizer::wanted(const PoolDemand& d, const SizingConfig& config) {
  const std::uint64_t work = d.ready + d.pending;
  if (work == 0 && d.in_flight == 0 && !d.more_can_arrive) return 0;
  std::uint64_t n = ceil_div(work, static_cast<std::uint64_t>(std::max(d.batch_size, 1)));
  if (d.grains_per_second > 0) {
    // Actors that drain the work within the time one more would take to start: beyond
    // that, a new actor would still be starting when the work is done.
    const double horizon = std::max(config.horizon_seconds, d.startup_seconds);
    const double by_rate = std::ceil(static_cast<double>(work) / (d.grains_per_second * horizon));
    n = std::min(n, static_cast<std::uint64_t>(by_rate));
  }
  if (work > 0) n = std::max<std::uint64_t>(n, 1);
  n = std::max<std::uint64_t>(n, static_cast<std::uint64_t>(d.min_replicas));
  return static_cast<int>(std::min<std::uint64_t>(n, static_cast<std::uint64_t>(d.max_replicas)));
}

int PoolSizer::fitting(const PoolDemand& d, const Resources& used, int want) const {
  int k = want;
  for_each_need(d.per_actor, [&](const std::string& name, double per) {
    const double left = amount_of(budget_, name) - amount_of(used, name);
    k = std::min(k, static_cast<int>(std::floor(std::max(0.0, left) / per + kSlack)));
  });
  return std::max(k, 0);
}

std::string PoolSizer::shortfall(std::span<const PoolDemand> pools, const std::vector<int>& actors,
                                 int pool, int more) const {
  const PoolDemand& d = pools[static_cast<std::size_t>(pool)];
  Resources used;
  for (std::size_t p = 0; p < pools.size(); ++p) add_resources(used, pools[p].per_actor, actors[p]);
  std::string binding;
  for_each_need(d.per_actor, [&](const std::string& name, double per) {
    if (binding.empty() && amount_of(used, name) + per * more > amount_of(budget_, name) + kSlack)
      binding = name;
  });
  std::string holders;
  for (std::size_t p = 0; p < pools.size(); ++p) {
    if (amount_of(pools[p].per_actor, binding) <= 0) continue;
    holders += fmt::format("{}'{}' ({})", holders.empty() ? "" : ", ", pools[p].name, actors[p]);
  }
  return fmt::format(
      "Module '{}' wants {} more actor{} of {}; the budget's {}: {} of {} in use by {}", d.name,
      more, more == 1 ? "" : "s", describe(d.per_actor), binding,
      fmt_amount(amount_of(used, binding)), fmt_amount(amount_of(budget_, binding)),
      holders.empty() ? "nothing (raise the budget)" : holders);
}

std::vector<SizingDecision> PoolSizer::decide(std::span<const PoolDemand> pools, double now) {
  if (config_.random_seed != 0) return decide_random(pools);
  const std::size_t n = pools.size();
  std::vector<int> target(n);
  std::vector<int> want(n, 0);
  std::vector<std::string> reason(n);
  for (std::size_t p = 0; p < n; ++p) target[p] = pools[p].actors;

  // Shrinks first: they free budget for the grows. A pool that nothing more can reach goes at
  // once; one whose backlog is gone while work can still reach it keeps its actors (a new
  // wave would otherwise wait for start-ups) and only lends its surplus: to pools that want
  // more, once it wanted fewer for the dwell (below), or to the budget after
  // `idle_release_seconds`.
  std::vector<int> keep(n, 0);
  std::vector<bool> lendable(n, false);
  for (std::size_t p = 0; p < n; ++p) {
    const PoolDemand& d = pools[p];
    if (!d.sizes_itself) continue;
    want[p] = wanted(d, config_);
    const std::uint64_t work = d.ready + d.pending;
    if (work == 0 && d.in_flight == 0 && !d.more_can_arrive) {
      below_since_[p] = -1;
      if (d.actors > 0) {
        target[p] = 0;
        reason[p] = "nothing more can reach it";
      }
      continue;
    }
    // While work can still reach it, an idle pool keeps one actor, so that work does not wait
    // for a start-up (a pool starved of budget may still take it: it wants none, below).
    keep[p] = std::max(want[p], d.more_can_arrive ? std::min(d.actors, 1) : 0);
    if (keep[p] >= d.actors) {
      below_since_[p] = -1;
      continue;
    }
    if (below_since_[p] < 0) below_since_[p] = now;
    const double below = now - below_since_[p];
    const bool settled = d.actors - keep[p] >= config_.shrink_margin &&
                         below >= config_.dwell_seconds &&
                         now - changed_at_[p] >= config_.dwell_seconds;
    lendable[p] = settled;
    const bool release = settled && (!d.more_can_arrive || below >= config_.idle_release_seconds);
    if (release) {
      target[p] = keep[p];
      reason[p] = fmt::format("its backlog ({} ready, {} waiting) needs {} for {:.1f} s", d.ready,
                              d.pending, want[p], below);
      if (keep[p] > want[p]) reason[p] += "; one kept while work can still reach it";
    }
  }

  // Grows in two passes: first towards what the READY work wants, then towards what the work
  // waiting for its inputs adds. Waiting Grains run only as fast as their producers deliver,
  // so a pool whose work all waits (assemble while OCR is behind) must not hold the budget a
  // pool with work in hand (OCR) needs; in the first pass a pool with nothing ready lends its
  // idle actors (one kept), once it has not changed for the dwell. Only the first pass
  // borrows: a pool's surplus lent to waiting work would only come back with start-ups when
  // the work that waited for it arrives.
  std::vector<int> want_ready(n, 0);
  std::vector<int> waiting_floor(n, -1);  // < 0: the pool lends nothing in the first pass
  for (std::size_t p = 0; p < n; ++p) {
    const PoolDemand& d = pools[p];
    if (!d.sizes_itself) continue;
    PoolDemand ready_only = d;
    ready_only.pending = 0;
    want_ready[p] = std::min(wanted(ready_only, config_), want[p]);
    // A pool with nothing ready keeps its busy actors, its minimum and one for its inputs.
    if (d.ready == 0 && now - changed_at_[p] >= config_.dwell_seconds)
      waiting_floor[p] = std::max({d.busy, d.min_replicas, std::min(target[p], 1)});
  }
  Resources used;
  for (std::size_t p = 0; p < n; ++p) add_resources(used, pools[p].per_actor, target[p]);
  // Moves actors of pool q (down to `floor`) to `to` until `more` of its actors fit.
  auto take = [&](std::size_t q, int floor, const PoolDemand& to, int more, const char* why) {
    while (target[q] > floor && fitting(to, used, more) < more) {
      --target[q];
      add_resources(used, pools[q].per_actor, -1);
      reason[q] = fmt::format("its actors go to Module '{}', which {}", to.name, why);
    }
  };
  std::vector<std::string> refusal(n);
  auto grow = [&](const std::vector<int>& goal, bool ready_pass) {
    // The starved (work and no actor) first, then the largest deficit per actor.
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    auto deficit = [&](std::size_t p) {
      return static_cast<double>(goal[p] - target[p]) / std::max(target[p], 1);
    };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const bool sa = target[a] == 0 && goal[a] > 0;
      const bool sb = target[b] == 0 && goal[b] > 0;
      if (sa != sb) return sa;
      return deficit(a) > deficit(b);
    });
    for (std::size_t p : order) {
      const PoolDemand& d = pools[p];
      if (!d.sizes_itself || goal[p] <= target[p]) continue;
      const int more = goal[p] - target[p];
      for (std::size_t q = 0; q < n && fitting(d, used, more) < more; ++q) {
        if (q == p || !pools[q].sizes_itself) continue;
        if (!ready_pass) continue;  // work that waits for inputs gets only free budget
        // The surplus of pools that wanted fewer for the dwell.
        if (lendable[q]) take(q, keep[q], d, more, "wants more");
        // The actors of pools whose work all waits for its inputs.
        if (waiting_floor[q] >= 0) take(q, waiting_floor[q], d, more, "has work ready");
      }
      if (target[p] == 0) {
        // Starved: take capacity from pools holding more actors than they want, the dwell and
        // the actor kept for work that may come included.
        for (std::size_t q = 0; q < n && fitting(d, used, more) < more; ++q) {
          if (q != p && pools[q].sizes_itself) take(q, want[q], d, more, "has work and none");
        }
      }
      const int k = fitting(d, used, more);
      target[p] += k;
      add_resources(used, d.per_actor, k);
      if (!ready_pass && k < more)
        refusal[p] = shortfall(pools, target, static_cast<int>(p), more - k);
      if (k == 0) continue;
      reason[p] = fmt::format("its backlog ({} ready, {} waiting, {} running) wants {}", d.ready,
                              d.pending, d.in_flight, want[p]);
      if (d.grains_per_second > 0)
        reason[p] += fmt::format(" at {:.1f} Grains/s per actor", d.grains_per_second);
    }
  };
  grow(want_ready, true);
  grow(want, false);
  for (std::size_t p = 0; p < n; ++p) {
    if (!refusal[p].empty() && target[p] > pools[p].actors) reason[p] += "; " + refusal[p];
  }

  std::vector<SizingDecision> out;
  for (std::size_t p = 0; p < n; ++p) {
    if (target[p] != pools[p].actors) {
      changed_at_[p] = now;
      below_since_[p] = -1;
      out.push_back({static_cast<int>(p), pools[p].actors, target[p], reason[p]});
    } else if (!refusal[p].empty() && refusal[p] != refused_[p]) {
      out.push_back({static_cast<int>(p), pools[p].actors, target[p], refusal[p]});
    }
    refused_[p] = refusal[p];
  }
  return out;
}

std::vector<SizingDecision> PoolSizer::decide_random(std::span<const PoolDemand> pools) {
  std::vector<SizingDecision> out;
  for (std::size_t p = 0; p < pools.size(); ++p) {
    const PoolDemand& d = pools[p];
    if (!d.sizes_itself || d.max_replicas == 0) continue;
    const bool work = d.ready + d.pending > 0;
    std::uniform_int_distribution<int> pick(work ? 1 : 0, d.max_replicas);
    const int to = pick(random_);
    if (to != d.actors)
      out.push_back({static_cast<int>(p), d.actors, to, "a random resize (test hook)"});
  }
  return out;
}

}  // namespace rayorch::detail
