// The tail split's logic (execution/run/tail_split.h): the fitted cost of a call, and each
// idle actor's share of the last work so that the actors end together.
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

TEST(TailShare, FullBatchesWhileMoreThanOneCallPerActorIsLeft) {
  const std::vector<double> others{0.0, 1.0, 2.0};
  EXPECT_EQ(rd::tail_share(kOcr, others, 4 * 32 + 1, 32), 32u);
}

TEST(TailShare, IdleActorsSplitTheLastWorkEvenly) {
  // Four idle actors, 40 Grains: a full batch would end at 3 + 1.6 = 4.6 s; four calls of 10
  // end at 3.5 s.
  const std::vector<double> others{0.0, 0.0, 0.0};
  EXPECT_EQ(rd::tail_share(kOcr, others, 40, 32), 10u);
}

TEST(TailShare, AnActorFreeTooLateToHelpTakesNothingInThePlan) {
  // One other actor, free in 4 s: it would start its call after the plan's end (2 Grains
  // alone end at 3.1 s), so the idle actor takes everything, as a full batch would.
  const std::vector<double> others{4.0};
  EXPECT_EQ(rd::tail_share(kOcr, others, 2, 32), 32u);
}

TEST(TailShare, CallsOfMillisecondsAreNotCut) {
  const rd::CallCost tiny{0.002, 0.0005};
  const std::vector<double> others{0.0, 0.0, 0.0};
  EXPECT_EQ(rd::tail_share(tiny, others, 40, 32), 32u);
}

TEST(TailShare, TakesAtLeastOneGrain) {
  const rd::CallCost per_grain_heavy{0.0, 1.0};
  const std::vector<double> others{0.0, 0.0, 0.0, 0.0, 0.0};
  // 3 Grains, 6 idle actors: the plan gives each of the first three one Grain.
  EXPECT_EQ(rd::tail_share(per_grain_heavy, others, 3, 8), 1u);
}

// Replays the last round of a pool: actors free at random times take, in order of their
// free time, either full batches or their tail_share of what is left; every call costs
// exactly the model. Returns when the last call ends, and checks every Grain was taken.
double replay(const rd::CallCost& cost, std::vector<double> free_at, std::size_t remaining,
              std::size_t batch, bool split) {
  using Event = std::pair<double, std::size_t>;  // (free at, actor)
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue;
  for (std::size_t a = 0; a < free_at.size(); ++a) queue.emplace(free_at[a], a);
  double end = *std::max_element(free_at.begin(), free_at.end());
  while (remaining > 0) {
    const auto [now, actor] = queue.top();
    queue.pop();
    std::vector<double> others;
    for (std::size_t a = 0; a < free_at.size(); ++a)
      if (a != actor) others.push_back(std::max(0.0, free_at[a] - now));
    const std::size_t share = split ? rd::tail_share(cost, others, remaining, batch) : batch;
    const std::size_t n = std::min(share, remaining);
    EXPECT_GE(n, 1u);
    remaining -= n;
    free_at[actor] = now + cost.fixed_s + cost.per_grain_s * static_cast<double>(n);
    end = std::max(end, free_at[actor]);
    queue.emplace(free_at[actor], actor);
  }
  return end;
}

TEST(TailShare, NeverEndsLaterThanFullBatchesAndUsuallyEarlier) {
  std::mt19937 random(7);
  const std::size_t batch = 32;
  double earlier = 0.0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::uniform_real_distribution<double> phase(0.0, kOcr.fixed_s + kOcr.per_grain_s * batch);
    std::vector<double> free_at(8);
    for (double& f : free_at) f = phase(random);
    const auto remaining = std::uniform_int_distribution<std::size_t>(1, 8 * batch)(random);
    const double full = replay(kOcr, free_at, remaining, batch, false);
    const double cut = replay(kOcr, free_at, remaining, batch, true);
    // Whole Grains: a share is rounded, which may cost one Grain's time per actor.
    EXPECT_LE(cut, full + kOcr.per_grain_s * 8) << "trial " << trial;
    earlier += full - cut;
  }
  EXPECT_GT(earlier / 2000, 0.2) << "the plan should shorten the last round on average";
}

}  // namespace
