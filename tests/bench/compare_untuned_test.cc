#include "compare_untuned.h"

#include <stdexcept>

#include <gtest/gtest.h>

namespace rayorch::bench {
namespace {

TEST(AllocationGrid, GivesOcrTheRestOfTheBudgetAndSkipsAllocationsThatLeaveNone) {
  const auto grid = allocation_grid(6, {1, 4}, {1, 2});
  // (4, 2) would leave no OCR actor of 6 CPUs.
  ASSERT_EQ(grid.size(), 3u);
  EXPECT_EQ(grid[0].render, 1);
  EXPECT_EQ(grid[0].ocr, 4);
  EXPECT_EQ(grid[0].assemble, 1);
  EXPECT_EQ(grid[1].ocr, 3);
  EXPECT_EQ(grid[2].render, 4);
  EXPECT_EQ(grid[2].ocr, 1);
  EXPECT_EQ(grid[2].assemble, 1);
}

TEST(AllocationGrid, AnEmptyGridIsAnErrorNamingTheOptions) {
  try {
    allocation_grid(3, {2}, {1});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--budget-cpus 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--grid-render"), std::string::npos) << e.what();
  }
}

AllocationGrid one_point_grid(Allocation a, double e2e) {
  AllocationGrid g;
  g.points.push_back({a, true, e2e, ""});
  g.best = 0;
  return g;
}

TEST(UntunedTargets, SetsThisProjectAgainstEachPeersFastestAllocationWithoutATarget) {
  const std::vector<SystemSpec> systems = {
      {.label = "rayorch (local)", .family = "rayorch"},
      {.label = "rayorch (on Ray)", .family = "rayorch-ray"},
      {.label = "reference [own defaults]", .peer = "reference", .family = "reference"}};
  std::vector<Summary> sums(3);
  sums[0] = {.ran = true, .e2e = {10.0}};
  sums[1] = {.ran = true, .e2e = {9.0}};
  sums[2] = {.ran = true, .e2e = {40.0}};
  const std::vector<PeerGrid> peers = {{"reference", one_point_grid({5, 8, 1}, 8.0)}};
  Report rep;
  nlohmann::json targets = nlohmann::json::object();
  std::string lines;
  untuned_targets(one_point_grid({5, 8, 1}, 10.0), peers, systems, sums, 1, rep, targets, lines);
  EXPECT_NE(lines.find("rayorch (on Ray) (replicas=auto) against reference at its fastest "
                       "allocation of the grid (render 5 / OCR 8 / assemble 1, 8.000 s): 1.125x"),
            std::string::npos)
      << lines;
  // Behind the peer's best allocation is reported, not a missed target: the targets are
  // the grid (local) and the peer as run.
  EXPECT_TRUE(rep.targets_met) << lines;
  EXPECT_EQ(targets.size(), 2u) << targets.dump();
}

TEST(CallsOverTime, PlotsTheTargetAndItsBusyShare) {
  // Two actors for the first 5 s of a 10 s run, then four; 15 busy actor-seconds of 30.
  const auto calls = nlohmann::json::parse(
      R"([{"call": "Ocr#1", "busy_seconds": 15, "run_seconds": 10,
           "actors_over_time": [[5, 4], [0, 2]]}])");
  const std::string text = calls_over_time(calls, 10);
  EXPECT_NE(text.find("|2222244444|"), std::string::npos) << text;
  EXPECT_NE(text.find("most 4"), std::string::npos) << text;
  EXPECT_NE(text.find("50.0% of the target's 30.0 actor-s"), std::string::npos) << text;
}

TEST(CallsOverTime, IsEmptyForAResultWithoutCalls) {
  EXPECT_EQ(calls_over_time(nlohmann::json::array()), "");
  EXPECT_EQ(calls_over_time(nlohmann::json()), "");
}

}  // namespace
}  // namespace rayorch::bench
