// The sizing policy of self-sizing pools, driven without threads: each test feeds it pool
// snapshots at given times and reads its decisions.
#include "execution/run/pool_sizing.h"

#include <gtest/gtest.h>

namespace rd = rayorch::detail;

namespace {

rd::PoolDemand pool(const std::string& name, int max, double cpus = 1.0, double gpus = 0.0) {
  rd::PoolDemand d;
  d.name = name;
  d.sizes_itself = true;
  d.max_replicas = max;
  d.per_actor.cpus = cpus;
  d.per_actor.gpus = gpus;
  return d;
}

rd::Resources cpus(double n, double gpus = 0.0) {
  return rd::Resources{.cpus = n, .gpus = gpus, .named = {}};
}

// A policy whose pools keep a size for 2 s before they lend or shrink, and give a surplus
// nobody takes back to the budget after `idle_release` seconds.
rd::SizingConfig dwell_of_2s(double idle_release = 30.0) {
  rd::SizingConfig config;
  config.dwell_seconds = 2.0;
  config.idle_release_seconds = idle_release;
  return config;
}

// An OCR pool of `actors` with nothing to do now, while work can still reach it (a long
// document still rendering upstream).
rd::PoolDemand idle_ocr(int actors) {
  rd::PoolDemand d = pool("Ocr", 8);
  d.actors = actors;
  d.more_can_arrive = true;
  return d;
}

// The decisions for one pool alone.
std::vector<rd::SizingDecision> decide(rd::PoolSizer& sizer, const rd::PoolDemand& d, double now) {
  return sizer.decide(std::span(&d, 1), now);
}

const rd::SizingDecision* decision_for(const std::vector<rd::SizingDecision>& ds, int p) {
  for (const auto& d : ds) {
    if (d.pool == p) return &d;
  }
  return nullptr;
}

TEST(PoolSizing, GrowsAStarvedPoolByManyActorsAtOnce) {
  rd::PoolSizer sizer(cpus(16), {}, 1);
  rd::PoolDemand ocr = pool("Ocr", 8);
  ocr.actors = 1;
  ocr.batch_size = 4;
  ocr.ready = 20;
  ocr.pending = 12;
  ocr.more_can_arrive = true;
  const auto ds = decide(sizer, ocr, 0.0);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].from, 1);
  EXPECT_EQ(ds[0].to, 8);  // 32 Grains in batches of 4, not one actor more
  EXPECT_NE(ds[0].reason.find("20 ready"), std::string::npos) << ds[0].reason;
}

TEST(PoolSizing, MeasuredThroughputAndStartupCostBoundTheGrowth) {
  rd::PoolSizer sizer(cpus(64), {}, 1);
  rd::PoolDemand ocr = pool("Ocr", 32);
  ocr.actors = 1;
  ocr.ready = 100;
  ocr.grains_per_second = 10.0;
  ocr.startup_seconds = 5.0;  // an actor drains 50 Grains in the time another takes to start
  ocr.more_can_arrive = true;
  const auto ds = decide(sizer, ocr, 0.0);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].to, 2);
}

TEST(PoolSizing, ShrinksToZeroAtOnceWhenNothingCanReachThePool) {
  rd::PoolSizer sizer(cpus(16), {}, 1);
  rd::PoolDemand render = pool("Render", 4);
  render.min_replicas = 2;
  render.actors = 4;
  const auto ds = sizer.decide(std::span(&render, 1), 0.0);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].to, 0);  // below min_replicas: nothing more can come
  EXPECT_EQ(ds[0].reason, "nothing more can reach it");
}

TEST(PoolSizing, WhileWorkCanStillComeAnIdlePoolGivesItsSurplusBackOnlyAfterTheIdleRelease) {
  rd::PoolSizer sizer(cpus(16), dwell_of_2s(30.0), 1);
  rd::PoolDemand ocr = idle_ocr(4);
  ocr.min_replicas = 2;
  EXPECT_TRUE(decide(sizer, ocr, 0.0).empty());
  // Past the dwell nobody wants its actors: it keeps them for the next wave.
  EXPECT_TRUE(decide(sizer, ocr, 2.0).empty());
  EXPECT_TRUE(decide(sizer, ocr, 29.9).empty());
  const auto ds = decide(sizer, ocr, 30.0);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].to, 2);  // min_replicas
}

TEST(PoolSizing, KeepsOneActorAfterTheIdleReleaseWhileWorkCanStillCome) {
  rd::PoolSizer sizer(cpus(16), dwell_of_2s(5.0), 1);
  rd::PoolDemand ocr = idle_ocr(4);
  EXPECT_TRUE(decide(sizer, ocr, 0.0).empty());
  const auto ds = decide(sizer, ocr, 5.0);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].to, 1);
  EXPECT_NE(ds[0].reason.find("one kept while work can still reach it"), std::string::npos)
      << ds[0].reason;
  // Kept, not shrunk further, however long it waits.
  ocr.actors = 1;
  EXPECT_TRUE(decide(sizer, ocr, 60.0).empty());
  // Once nothing can reach it, it goes.
  ocr.more_can_arrive = false;
  const auto end = decide(sizer, ocr, 61.0);
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].to, 0);
}

TEST(PoolSizing, ShrinksAfterTheDwellWhenNothingMoreCanComeButWorkRemains) {
  rd::PoolSizer sizer(cpus(16), dwell_of_2s(), 1);
  rd::PoolDemand ocr = pool("Ocr", 8);
  ocr.actors = 4;
  ocr.ready = 1;  // the tail: one batch left, nothing upstream
  EXPECT_TRUE(decide(sizer, ocr, 0.0).empty());
  const auto ds = decide(sizer, ocr, 2.0);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].to, 1);
}

TEST(PoolSizing, APoolThatWantsMoreTakesTheSurplusOfOneThatWantedFewerForTheDwell) {
  rd::PoolSizer sizer(cpus(6), dwell_of_2s(), 2);
  std::vector<rd::PoolDemand> ps{pool("Ocr", 6), pool("Assemble", 6)};
  ps[0].actors = 5;
  ps[0].ready = 1;  // its last batch; a long document still rendering upstream
  ps[0].more_can_arrive = true;
  ps[1].actors = 1;
  ps[1].ready = 3;
  ps[1].more_can_arrive = true;  // wants 3: two more than the budget fits
  EXPECT_EQ(decision_for(sizer.decide(ps, 0.0), 0), nullptr);  // within the dwell: kept
  const auto ds = sizer.decide(ps, 2.0);
  const auto* ocr = decision_for(ds, 0);
  const auto* assemble = decision_for(ds, 1);
  ASSERT_NE(ocr, nullptr);
  ASSERT_NE(assemble, nullptr);
  EXPECT_EQ(ocr->to, 3);  // only what Assemble wants, not down to one
  EXPECT_EQ(assemble->to, 3);
  EXPECT_NE(ocr->reason.find("go to Module 'Assemble', which wants more"), std::string::npos)
      << ocr->reason;
}

TEST(PoolSizing, APoolWhoseWorkAllWaitsForInputsLendsItsIdleActorsToOneWithWorkReady) {
  // Seen on Ray: the render pool shrank and assemble, whose 95 Grains all waited for OCR,
  // took the freed CPUs; OCR, with 862 pages ready, then had one actor for ten seconds.
  rd::PoolSizer sizer(cpus(14), dwell_of_2s(), 3);
  std::vector<rd::PoolDemand> ps{pool("Render", 14), pool("Ocr", 14), pool("Assemble", 14)};
  for (auto& p : ps) p.more_can_arrive = true;
  ps[0].actors = 3;
  ps[0].ready = 3;
  ps[0].busy = 3;
  ps[1].actors = 1;
  ps[1].batch_size = 32;
  ps[1].ready = 862;
  ps[1].busy = 1;
  ps[2].actors = 10;
  ps[2].pending = 95;  // every one waits for its document's pages
  ps[2].busy = 0;
  const auto ds = sizer.decide(ps, 10.0);
  const auto* ocr = decision_for(ds, 1);
  const auto* assemble = decision_for(ds, 2);
  ASSERT_NE(ocr, nullptr);
  ASSERT_NE(assemble, nullptr);
  EXPECT_EQ(assemble->to, 1);  // one kept for the inputs to come
  EXPECT_EQ(ocr->to, 10);      // all the budget leaves
  EXPECT_NE(assemble->reason.find("go to Module 'Ocr', which has work ready"), std::string::npos)
      << assemble->reason;
  // Within the dwell of that change, it lends nothing more: the OCR pool's shortfall waits.
  ps[1].actors = 10;
  ps[2].actors = 1;
  ps[1].ready = 2000;
  const auto again = sizer.decide(ps, 10.5);
  const auto* more = decision_for(again, 2);
  EXPECT_TRUE(more == nullptr || more->to == more->from) << more->reason;  // a refusal at most
  EXPECT_EQ(decision_for(again, 0), nullptr);  // render's busy actors stay
}

TEST(PoolSizing, WorkThatWaitsForInputsBorrowsNoSurplus) {
  // Seen on Ray: the OCR pool lent two idle actors to assemble, whose 35 Grains all waited
  // for OCR, and started them again four seconds later when a long document's pages came.
  rd::PoolSizer sizer(cpus(12), dwell_of_2s(), 2);
  std::vector<rd::PoolDemand> ps{pool("Ocr", 12), pool("Assemble", 12)};
  for (auto& p : ps) p.more_can_arrive = true;
  ps[0].actors = 9;
  ps[0].ready = 1;  // wants one: eight spare
  ps[1].actors = 3;
  ps[1].pending = 35;
  sizer.decide(ps, 0.0);  // OCR starts wanting fewer
  const auto ds = sizer.decide(ps, 5.0);
  EXPECT_EQ(decision_for(ds, 0), nullptr);  // OCR keeps its actors
  const auto* assemble = decision_for(ds, 1);
  EXPECT_TRUE(assemble == nullptr || assemble->to == 3);  // a refusal at most
  // Work ready is another matter: it borrows the surplus.
  ps[1].ready = 4;
  const auto ready = sizer.decide(ps, 6.0);
  ASSERT_NE(decision_for(ready, 0), nullptr);
  EXPECT_LT(decision_for(ready, 0)->to, 9);
}

TEST(PoolSizing, AStarvedPoolTakesTheActorKeptForWorkThatMayCome) {
  rd::SizingConfig config;
  config.dwell_seconds = 100.0;
  rd::PoolSizer sizer(cpus(1), config, 2);
  std::vector<rd::PoolDemand> ps{pool("Render", 4), pool("Ocr", 4)};
  ps[0].actors = 1;
  ps[0].more_can_arrive = true;  // kept: its work may come, but it has none
  ps[1].ready = 3;
  ps[1].more_can_arrive = true;
  const auto ds = sizer.decide(ps, 0.0);
  const auto* render = decision_for(ds, 0);
  const auto* ocr = decision_for(ds, 1);
  ASSERT_NE(render, nullptr);
  ASSERT_NE(ocr, nullptr);
  EXPECT_EQ(render->to, 0);
  EXPECT_EQ(ocr->to, 1);
}

TEST(PoolSizing, HysteresisKeepsAPoolFromThrashing) {
  rd::PoolSizer sizer(cpus(16), dwell_of_2s(), 1);
  rd::PoolDemand ocr = idle_ocr(2);
  ocr.ready = 8;
  ASSERT_EQ(decide(sizer, ocr, 0.0).at(0).to, 8);
  ocr.actors = 8;
  // The backlog comes and goes faster than the dwell: no shrink.
  for (double t = 0.5; t < 4.0; t += 0.5) {
    ocr.ready = (static_cast<int>(t * 2) % 2 == 0) ? 8 : 0;
    EXPECT_TRUE(decide(sizer, ocr, t).empty()) << "at " << t;
  }
  // A shortfall of less than the margin is not acted upon either.
  rd::SizingConfig wide = dwell_of_2s();
  wide.shrink_margin = 3;
  rd::PoolSizer margin(cpus(16), wide, 1);
  ocr.actors = 3;
  ocr.ready = 1;  // wants 1: two fewer, under the margin of three
  EXPECT_TRUE(decide(margin, ocr, 0.0).empty());
  EXPECT_TRUE(decide(margin, ocr, 10.0).empty());
}

TEST(PoolSizing, TheBudgetCapsGrowthAndItsExhaustionIsExplainedByName) {
  rd::PoolSizer sizer(cpus(8, 2), {}, 2);
  std::vector<rd::PoolDemand> ps{pool("Render", 4, 1.0), pool("Ocr", 8, 1.0, 1.0)};
  ps[0].sizes_itself = false;  // a fixed pool holds its share
  ps[0].actors = 2;
  ps[1].actors = 0;
  ps[1].ready = 6;
  ps[1].more_can_arrive = true;
  const auto ds = sizer.decide(ps, 0.0);
  const auto* ocr = decision_for(ds, 1);
  ASSERT_NE(ocr, nullptr);
  EXPECT_EQ(ocr->to, 2);
  EXPECT_NE(ocr->reason.find("Module 'Ocr' wants 4 more actors of 1 CPU, 1 GPU; the budget's "
                             "GPU: 2 of 2 in use by 'Ocr' (2)"),
            std::string::npos)
      << ocr->reason;
  // The same refusal is reported once, not at every decision.
  ps[1].actors = 2;
  EXPECT_EQ(decision_for(sizer.decide(ps, 0.1), 1), nullptr);
}

TEST(PoolSizing, AStarvedPoolTakesCapacityFromAPoolThatWantsLess) {
  rd::SizingConfig config;
  config.dwell_seconds = 100.0;  // the donor's own shrink would wait
  rd::PoolSizer sizer(cpus(4), config, 2);
  std::vector<rd::PoolDemand> ps{pool("Render", 4), pool("Ocr", 4)};
  ps[0].actors = 4;
  ps[0].ready = 1;
  ps[0].more_can_arrive = true;  // wants 1
  ps[1].ready = 3;
  ps[1].more_can_arrive = true;
  const auto ds = sizer.decide(ps, 0.0);
  const auto* render = decision_for(ds, 0);
  const auto* ocr = decision_for(ds, 1);
  ASSERT_NE(render, nullptr);
  ASSERT_NE(ocr, nullptr);
  EXPECT_EQ(render->to, 1);
  EXPECT_EQ(ocr->to, 3);
  EXPECT_NE(render->reason.find("'Ocr'"), std::string::npos) << render->reason;
}

TEST(PoolSizing, ANamedResourceMissingFromTheBudgetIsNamed) {
  rd::PoolSizer sizer(cpus(8), {}, 1);
  rd::PoolDemand tpu = pool("Embed", 2);
  tpu.per_actor.named["tpu"] = 1.0;
  tpu.ready = 1;
  const auto ds = sizer.decide(std::span(&tpu, 1), 0.0);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].to, 0);
  EXPECT_NE(ds[0].reason.find("the budget's tpu: 0 of 0"), std::string::npos) << ds[0].reason;
}

TEST(PoolSizing, TheRandomHookKeepsAnActorWhereThereIsWork) {
  rd::SizingConfig config;
  config.random_seed = 7;
  rd::PoolSizer sizer(cpus(1), config, 2);
  std::vector<rd::PoolDemand> ps{pool("A", 3), pool("B", 3)};
  ps[0].ready = 5;
  bool saw_zero = false;
  for (int i = 0; i < 200; ++i) {
    for (const auto& d : sizer.decide(ps, i)) {
      ASSERT_LE(d.to, 3);
      if (d.pool == 0) {
        ASSERT_GE(d.to, 1);
      }
      if (d.pool == 1 && d.to == 0) saw_zero = true;
      ps[static_cast<std::size_t>(d.pool)].actors = d.to;
    }
  }
  EXPECT_TRUE(saw_zero);
}

}  // namespace
