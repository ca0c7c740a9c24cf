// The sizing policy of self-sizing pools (Module::auto_replicas, DESIGN 6.1.7):
// from what each pool's Calls have to do now and will have (the lineage's counts), the throughput
// its actors measured and what starting one costs, it sets each pool's target number of actors
// within the executor's resource budget. Pure logic: the driver feeds it snapshots and applies its
// decisions (execution/driver.cc); a unit test drives it without threads or clocks.
//
// Rules:
// - Wanted actors: enough to drain the backlog (READY + Grains created and waiting for their
//   inputs) within the time an actor takes to start (at least `horizon_seconds`), at the
//   measured Grains/s per actor; no more than one per batch of work; unmeasured, one per batch.
//   Clamped to [min_replicas, max_replicas]; at least 1 while the pool has work.
// - Grows at once, by as many actors as wanted (not one at a time), largest deficit first; in
//   two passes, first towards what the READY work wants, then towards what the waiting work
//   adds. In the first pass a pool with nothing ready, unchanged for `dwell_seconds`, lends its
//   idle actors (keeping its busy ones, its minimum and one) to pools with work ready.
// - Shrinks to 0 at once when nothing more can reach the pool (no work, nothing in flight,
//   nothing upstream unsealed, no source rows left to admit). While work can still reach it, a
//   pool that wanted fewer by at least `shrink_margin` for `dwell_seconds`, and has not
//   changed within `dwell_seconds` (hysteresis), lends its surplus (down to the wanted count,
//   never below min_replicas nor below one actor) to pools that want more than the budget
//   fits, and gives it back to the budget only after `idle_release_seconds`: the next wave of
//   work (a long document's pages) then finds its actors started.
// - A pool with work and no actor that the budget cannot fit takes capacity from pools holding
//   more actors than they want, the one kept for work that may come included (their dwell
//   waived).
// - Budget exhaustion is a decision too (from == to or a partial grow) whose reason names the
//   resource and who holds it.
//
// Threading: one instance per driver, used on the driver's thread.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "rayorch/module_options.h"

namespace rayorch::detail {

/// Resources of one actor or of a budget.
struct Resources {
  double cpus = 0.0;
  double gpus = 0.0;
  std::map<std::string, double> named;
};

/// Adds `times` actors' worth of `per` to `to` (times may be negative).
void add_resources(Resources& to, const Resources& per, int times);
/// A budget with its defaults resolved (cpus 0 -> `machine_cpus`).
Resources resolve_budget(const ResourceBudget& budget, int machine_cpus);
/// What one actor of a pool with these options holds.
Resources actor_resources(const ModuleOptions& options);

/// One pool as the policy sees it at a decision.
struct PoolDemand {
  std::string name;
  bool sizes_itself = false;  ///< false: a fixed pool, counted against the budget only
  int min_replicas = 0;
  int max_replicas = 0;  ///< the pool's slots that can still start (failed ones excluded)
  int batch_size = 1;
  Resources per_actor;
  int actors = 0;                  ///< started or starting (retiring ones excluded)
  int busy = 0;                    ///< actors running an RPC
  std::uint64_t ready = 0;         ///< READY Grains of its Calls
  std::uint64_t pending = 0;       ///< Grains created, waiting for their inputs
  std::uint64_t in_flight = 0;     ///< Grains in running RPCs
  bool more_can_arrive = false;    ///< unsealed work upstream or source rows not yet admitted
  double grains_per_second = 0.0;  ///< per busy actor, measured (0: not yet)
  double startup_seconds = 0.0;    ///< mean constructor time, measured (0: not yet)
};

/// A change of one pool's target (or a grow the budget refused: from == to).
struct SizingDecision {
  int pool = -1;
  int from = 0;
  int to = 0;
  std::string reason;
};

struct SizingConfig {
  double dwell_seconds = 2.0;    ///< a pool keeps a size at least this long before shrinking
  int shrink_margin = 1;         ///< shrink only when wanting this many fewer actors
  double horizon_seconds = 0.5;  ///< drain the backlog within max(this, start-up time)
  /// A surplus no other pool wants goes back to the budget after this long (while work can
  /// still reach the pool; at once when none can).
  double idle_release_seconds = 30.0;
  /// Non-zero: a test hook; targets are drawn at random from this seed (at least 1 actor for a
  /// pool with work, as the real policy), for the schedule-independence suites.
  std::uint64_t random_seed = 0;
};

class PoolSizer {
 public:
  PoolSizer(Resources budget, SizingConfig config, std::size_t pools);

  /// The decisions for `pools` (plan order) at `now` (seconds on any monotonic clock).
  std::vector<SizingDecision> decide(std::span<const PoolDemand> pools, double now);

  /// The actors a pool wants, before the budget (exposed for tests).
  static int wanted(const PoolDemand& d, const SizingConfig& config);
  /// How many more actors of `d` fit in what `used` leaves of the budget (at most `want`).
  int fitting(const PoolDemand& d, const Resources& used, int want) const;
  /// Why `more` actors of `pools[pool]` do not fit while the pools hold `actors`: names the
  /// resource and the pools that hold it.
  std::string shortfall(std::span<const PoolDemand> pools, const std::vector<int>& actors, int pool,
                        int more) const;

 private:
  std::vector<SizingDecision> decide_random(std::span<const PoolDemand> pools);

  Resources budget_;
  SizingConfig config_;
  std::vector<double> changed_at_;    // per pool: the last change
  std::vector<double> below_since_;   // per pool: since when it wanted fewer (< 0: it did not)
  std::vector<std::string> refused_;  // per pool: the last budget refusal reported
  std::mt19937_64 random_;
};

}  // namespace rayorch::detail
