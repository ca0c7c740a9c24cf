// The measured process tree of `bench compare`: orphans come back to be reaped and counted,
// nothing of the tree survives, the exit status and the timeout are reported.
#include "process_tree.h"

#include <dirent.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

using rayorch::bench::run_process_tree;

// Processes whose parent is this test.
std::vector<int> my_children() {
  std::vector<int> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == ::getpid()) out.push_back(std::stoi(name));
  }
  return out;
}

std::string log_path() {
  return (std::filesystem::temp_directory_path() /
          ("process-tree-test-" + std::to_string(::getpid()) + ".log"))
      .string();
}

TEST(ProcessTree, OrphansAreReapedAndNothingSurvives) {
  // The shell exits at once; its background sleep is orphaned mid-run.
  const auto run = run_process_tree({"sh", "-c", "sleep 30 & echo started"}, log_path(), 60);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_FALSE(run.timed_out);
  EXPECT_TRUE(my_children().empty());
}

TEST(ProcessTree, CountsTheCpuOfGrandchildren) {
  // A grandchild burns CPU while its parent only waits.
  const auto run = run_process_tree(
      {"sh", "-c", "sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' & wait"}, log_path(),
      120);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_GT(run.cpu_seconds, 0.05);
  EXPECT_GE(run.peak_processes, 2u);
}

TEST(ProcessTree, SamplesTheTreeMemory) {
  // 64 MiB touched and held in a grandchild.
  const auto run = run_process_tree(
      {"sh", "-c", "python3 -c 'import time; b = bytearray(64 << 20); time.sleep(0.5)'; true"},
      log_path(), 120);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_GE(run.peak_rss_mib, 64.0);
}

TEST(ProcessTree, ReportsExitStatusAndTimeout) {
  EXPECT_EQ(run_process_tree({"sh", "-c", "exit 3"}, log_path(), 60).exit_code, 3);
  const auto slow = run_process_tree({"sleep", "30"}, log_path(), 1);
  EXPECT_TRUE(slow.timed_out);
  EXPECT_TRUE(my_children().empty());
}

}  // namespace
