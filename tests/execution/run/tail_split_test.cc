// The tail split's logic (execution/run/tail_split.h): the fitted cost of a call, and each
// idle actor's part of the last work so that the actors end together, late ones included.
#include "execution/run/tail_split.h"

#include <algorithm>
#include <cstddef>
#include <queue>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace rd = rayorch::detail;

TEST(CallCostModel, FitsTheFixedAndPerGrainPartsFromCallsOfTwoSizes) {
  rd::CallCostModel m;
  EXPECT_FALSE(m.cost().has_value());
  m.add(32, 3.0 + 0.05 * 32);
  EXPECT_FALSE(m.cost().has_value()) << "one call cannot tell the parts apart";
  m.add(32, 3.0 + 0.05 * 32);
  EXPECT_FALSE(m.cost().has_value()) << "calls of one size cannot either";
  m.add(10, 3.0 + 0.05 * 10);
  const auto c = m.cost();
  ASSERT_TRUE(c.has_value());
  EXPECT_NEAR(c->fixed_s, 3.0, 1e-9);
  EXPECT_NEAR(c->per_grain_s, 0.05, 1e-9);
}

TEST(CallCostModel, NoUsableFitWhenLargerCallsAreNotSlower) {
  rd::CallCostModel m;
  m.add(2, 1.0);
  m.add(8, 0.5);
  EXPECT_FALSE(m.cost().has_value());
}

TEST(CallCostModel, ANegativeFixedPartFromNoiseCountsAsZero) {
  rd::CallCostModel m;
  m.add(1, 0.05);
  m.add(10, 1.2);
  const auto c = m.cost();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->fixed_s, 0.0);
  EXPECT_GT(c->per_grain_s, 0.0);
}

constexpr rd::CallCost kOcr{3.0, 0.05};  // the startup regime's OCR call

// Ready this long, an actor's busy share allows any idle the plan could leave.
constexpr double kLongReady = 1e4;

// The idle actor asking, then the others, free in `others_free_in_s`; all ready long ago.
std::vector<rd::TailActor> pool_of(const std::vector<double>& others_free_in_s) {
  std::vector<rd::TailActor> actors{{.free_in_s = 0.0, .ready_for_s = kLongReady}};
  for (double f : others_free_in_s) actors.push_back({.free_in_s = f, .ready_for_s = kLongReady});
  return actors;
}

TEST(TailShare, FullBatchesWhileMoreThanOneCallPerActorIsLeft) {
  EXPECT_EQ(rd::tail_share(kOcr, pool_of({0.0, 1.0, 2.0}), 4 * 32 + 1, 32), 32u);
  // Eight idle actors, 8 * 32 + 8 Grains: each doing 33 in two calls would end at 7.65 s
  // instead of 8.0 s, but cutting before the last round has the pool's parents finish
  // together; full batches, and the last round is cut.
  EXPECT_EQ(rd::tail_share(kOcr, pool_of(std::vector<double>(7, 0.0)), 8 * 32 + 8, 32), 32u);
}

TEST(TailShare, PlansOverSeveralRoundsWhenAnActorWouldIdleTooLong) {
  // As above, but one actor became ready 10 s ago, long after the others: full batches leave
  // it idle for the last 3.4 s, a third of its time. The plan: 33 Grains each in two calls,
  // ending together. Actors that all became ready 10 s ago keep their full batches.
  EXPECT_EQ(
      rd::tail_share(kOcr, std::vector<rd::TailActor>(8, {.free_in_s = 0.0, .ready_for_s = 10.0}),
                     8 * 32 + 8, 32),
      32u);
  std::vector<rd::TailActor> actors = pool_of(std::vector<double>(7, 0.0));
  actors.back().ready_for_s = 10.0;
  EXPECT_EQ(rd::tail_share(kOcr, actors, 8 * 32 + 8, 32), 17u);
}

TEST(TailShare, IdleActorsSplitTheLastWorkEvenly) {
  // Four idle actors, 40 Grains: a full batch would end at 3 + 1.6 = 4.6 s; four calls of 10
  // end at 3.5 s.
  const std::vector<double> others{0.0, 0.0, 0.0};
  EXPECT_EQ(rd::tail_share(kOcr, pool_of(others), 40, 32), 10u);
}

TEST(TailShare, AnActorFreeTooLateToHelpTakesNothingInThePlan) {
  // One other actor, free in 4 s: it would start its call after the plan's end (2 Grains
  // alone end at 3.1 s), so the idle actor takes everything, as a full batch would.
  const std::vector<double> others{4.0};
  EXPECT_EQ(rd::tail_share(kOcr, pool_of(others), 2, 32), 32u);
}

TEST(TailShare, AnActorThatJoinedLateIsNotLeftIdleAtTheEnd) {
  // Two idle actors, 68 Grains: full batches give each 32 and then this one 4 more (3.2 s
  // alone), ending at 7.8 s; the plan's earliest end, 7.7 s, is not 0.1 s earlier, so with
  // actors ready long ago full batches stay.
  EXPECT_EQ(rd::tail_share(kOcr, pool_of({0.0}), 68, 32), 32u);
  // The other actor became ready 10 s ago, long after this one: idle for the last 3.2 s it
  // would be busy for 82 % of its time. Instead each takes 34 Grains in two calls, ending
  // together at 7.7 s.
  const std::vector<rd::TailActor> late{{.free_in_s = 0.0, .ready_for_s = kLongReady},
                                        {.free_in_s = 0.0, .ready_for_s = 10.0}};
  EXPECT_EQ(rd::tail_share(kOcr, late, 68, 32), 17u);
}

TEST(TailShare, CallsOfMillisecondsAreNotCut) {
  const rd::CallCost tiny{0.002, 0.0005};
  const std::vector<double> others{0.0, 0.0, 0.0};
  EXPECT_EQ(rd::tail_share(tiny, pool_of(others), 40, 32), 32u);
}

TEST(TailShare, TakesAtLeastOneGrain) {
  const rd::CallCost per_grain_heavy{0.0, 1.0};
  const std::vector<double> others{0.0, 0.0, 0.0, 0.0, 0.0};
  // 3 Grains, 6 idle actors: the plan gives each of the first three one Grain.
  EXPECT_EQ(rd::tail_share(per_grain_heavy, pool_of(others), 3, 8), 1u);
}

// Replays the last rounds of a pool: actors free at random times take, in order of their
// free time, either full batches or their tail_share of what is left; every call costs
// exactly the model. `ready_at[a]`: when actor a became ready (long ago if not given).
// Returns when each actor's last call ends, and checks every call takes a Grain.
std::vector<double> replay(const rd::CallCost& cost, std::vector<double> free_at,
                           std::size_t remaining, std::size_t batch, bool split,
                           const std::vector<double>& ready_at = {}) {
  using Event = std::pair<double, std::size_t>;  // (free at, actor)
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue;
  for (std::size_t a = 0; a < free_at.size(); ++a) queue.emplace(free_at[a], a);
  auto ready_for = [&](std::size_t a, double now) {
    return ready_at.empty() ? kLongReady : now - ready_at[a];
  };
  while (remaining > 0) {
    const auto [now, actor] = queue.top();
    queue.pop();
    std::vector<rd::TailActor> actors{{.free_in_s = 0.0, .ready_for_s = ready_for(actor, now)}};
    for (std::size_t a = 0; a < free_at.size(); ++a) {
      if (a != actor)
        actors.push_back(
            {.free_in_s = std::max(0.0, free_at[a] - now), .ready_for_s = ready_for(a, now)});
    }
    const std::size_t share = split ? rd::tail_share(cost, actors, remaining, batch) : batch;
    const std::size_t n = std::min(share, remaining);
    EXPECT_GE(n, 1u);
    remaining -= n;
    free_at[actor] = now + cost.fixed_s + cost.per_grain_s * static_cast<double>(n);
    queue.emplace(free_at[actor], actor);
  }
  return free_at;
}

double last(const std::vector<double>& ends) {
  return *std::max_element(ends.begin(), ends.end());
}

// Eight actors free at random phases of a full call, one to `rounds` rounds of work.
struct Trial {
  std::vector<double> free_at;
  std::size_t remaining = 0;
};
Trial draw(std::mt19937& random, int rounds, std::size_t batch) {
  std::uniform_real_distribution<double> phase(0.0, kOcr.fixed_s + kOcr.per_grain_s * batch);
  Trial t{std::vector<double>(8), 0};
  for (double& f : t.free_at) f = phase(random);
  t.remaining = std::uniform_int_distribution<std::size_t>(1, rounds * 8 * batch)(random);
  return t;
}

TEST(TailShare, NeverEndsLaterThanFullBatchesAndUsuallyEarlier) {
  std::mt19937 random(7);
  const std::size_t batch = 32;
  double earlier = 0.0;
  for (int trial = 0; trial < 2000; ++trial) {
    const Trial t = draw(random, 4, batch);
    const double full = last(replay(kOcr, t.free_at, t.remaining, batch, false));
    const double cut = last(replay(kOcr, t.free_at, t.remaining, batch, true));
    // Whole Grains: a share is rounded, which may cost one Grain's time per actor.
    EXPECT_LE(cut, full + kOcr.per_grain_s * 8) << "trial " << trial;
    earlier += full - cut;
  }
  EXPECT_GT(earlier / 2000, 0.3) << "the plan should shorten the last rounds on average";
}

TEST(TailShare, AnActorThatJoinedLateIdlesLessAndTheRunEndsAsEarly) {
  // Actor 0 became ready 30 s before the replay starts, the others long before; up to eight
  // rounds are left, as when a slow model load ends late in a run. With full batches actor 0
  // idles at the end for more than 5 % of its time in about three runs in ten; with the plan,
  // in few, and the runs end about as early as the plan without actor 0's readiness would.
  std::mt19937 random(11);
  const std::size_t batch = 32;
  const int trials = 2000;
  int idle_full = 0;
  int idle_cut = 0;
  double end_cut = 0.0;
  double end_blind = 0.0;
  for (int trial = 0; trial < trials; ++trial) {
    const Trial t = draw(random, 8, batch);
    std::vector<double> ready_at(8, -kLongReady);
    ready_at[0] = -30.0;
    auto idles_too_long = [](const std::vector<double>& ends) {
      return last(ends) - ends[0] > rd::kTailIdleShare * (last(ends) + 30.0);
    };
    idle_full += idles_too_long(replay(kOcr, t.free_at, t.remaining, batch, false));
    const std::vector<double> cut = replay(kOcr, t.free_at, t.remaining, batch, true, ready_at);
    idle_cut += idles_too_long(cut);
    end_cut += last(cut);
    end_blind += last(replay(kOcr, t.free_at, t.remaining, batch, true));
  }
  EXPECT_GT(idle_full, trials / 5);
  EXPECT_LT(idle_cut, trials / 20);
  EXPECT_LT((end_cut - end_blind) / trials, 0.02) << "seconds later on average";
}

}  // namespace
