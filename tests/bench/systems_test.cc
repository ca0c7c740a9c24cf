// The systems of `bench compare` and `bench failure --peers`: this project on Ray is one more
// system, run with the project's Python, and the targets are evaluated with it when it ran.
#include "systems.h"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;
using rayorch::bench::default_partition_candidates;
using rayorch::bench::has_partitions;
using rayorch::bench::make_system_env;
using rayorch::bench::parse_systems;
using rayorch::bench::run_system;
using rayorch::bench::SystemSpec;
using rayorch::bench::target_system;

TEST(BenchSystems, ThisProjectOnRayIsASystemWithItsOwnScriptAndPython) {
  const auto systems = parse_systems("rayorch-ray,reference,ray:groupby", true);
  ASSERT_EQ(systems.size(), 4u);
  EXPECT_EQ(systems[0].family, "rayorch");
  EXPECT_TRUE(systems[0].peer.empty());
  EXPECT_NE(systems[0].label.find("deployment difference"), std::string::npos);
  EXPECT_EQ(systems[1].family, "rayorch-ray");
  EXPECT_EQ(systems[1].script_name(), "rayorch_ray_peer.py");
  EXPECT_TRUE(systems[1].project_python);
  EXPECT_TRUE(systems[1].is_this_project());
  EXPECT_EQ(systems[2].family, "reference");
  EXPECT_EQ(systems[2].script_name(), "reference_peer.py");
  EXPECT_FALSE(systems[2].project_python);
  EXPECT_FALSE(systems[2].is_this_project());
  EXPECT_EQ(systems[3].family, "ray-data");
  EXPECT_EQ(systems[3].arm, "groupby");
  EXPECT_EQ(systems[3].script_name(), "ray_peer.py");
}

TEST(BenchSystems, ThisProjectOnRayHasNoArms) {
  EXPECT_THROW(parse_systems("rayorch-ray:groupby", false), std::invalid_argument);
}

TEST(BenchSystems, EachScriptRunsWithItsPython) {
  const fs::path work = fs::temp_directory_path() / "rayorch-bench-systems-test";
  const auto env = make_system_env("/peers/python", "/project/python", "", work.string(), 10);
  const auto systems = parse_systems("rayorch-ray,daft:driver", false);
  EXPECT_EQ(env.python_for(systems[0]), "/project/python");
  EXPECT_EQ(env.python_for(systems[1]), "/peers/python");
  const auto defaults = make_system_env("", "", "", work.string(), 10);
  EXPECT_EQ(fs::path(defaults.project_python).parent_path().parent_path().filename(), ".venv");
  EXPECT_EQ(fs::path(defaults.python).parent_path().parent_path().filename(), ".venv-peers");
  fs::remove_all(work);
}

TEST(BenchSystems, AMissingProjectPythonIsNamedWithWhatToDo) {
  const fs::path work = fs::temp_directory_path() / "rayorch-bench-systems-missing";
  const auto env =
      make_system_env("/bin/sh", "/nonexistent/.venv/bin/python", "", work.string(), 10);
  const auto systems = parse_systems("rayorch-ray", false);
  const auto run = run_system(env, systems[0], work / "corpus.json", "missing");
  EXPECT_FALSE(run.ran);
  EXPECT_NE(run.error.find("/nonexistent/.venv/bin/python"), std::string::npos) << run.error;
  EXPECT_NE(run.error.find("scripts/python-env.sh"), std::string::npos) << run.error;
  fs::remove_all(work);
}

TEST(BenchSystems, TargetsUseThisProjectOnRayWhenItRan) {
  const auto systems = parse_systems("reference,rayorch-ray", true);
  EXPECT_EQ(target_system(systems, {true, true, true}), 2u);
  // Not run: the local executor's figures stand in (a deployment difference).
  EXPECT_EQ(target_system(systems, {true, true, false}), 0u);
  EXPECT_EQ(target_system(parse_systems("reference", true), {true, true}), 0u);
}

TEST(BenchSystems, OnlyGroupbyArmsOfRayDataAndDaftHavePartitionsToTune) {
  const auto systems = parse_systems("ray:groupby,ray:driver,daft:groupby,reference", true);
  std::vector<bool> tuned;
  for (const SystemSpec& s : systems) tuned.push_back(has_partitions(s));
  EXPECT_EQ(tuned, (std::vector<bool>{false, true, false, true, false}));
}

TEST(BenchSystems, PartitionCandidatesSpanHalfToFourTimesTheAssembleActors) {
  EXPECT_EQ(default_partition_candidates(4), (std::vector<int>{2, 4, 8, 16}));
  EXPECT_EQ(default_partition_candidates(1), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(default_partition_candidates(0), (std::vector<int>{1, 2, 4}));
}

}  // namespace
