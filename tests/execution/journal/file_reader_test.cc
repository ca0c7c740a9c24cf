// Reading a partial run journal (src/execution/journal/file_reader.h): a prefix, a torn or
// corrupt tail, or what a child process killed with SIGKILL at random points left behind
// resumes to the uninterrupted outputs, with every root delivered exactly once and no
// recorded root run again.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/journal_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>
#include <rayorch/testing.h>

namespace {

namespace ro = rayorch;

using journal_testing::calls;
using journal_testing::inputs;
using journal_testing::journal_options;
using journal_testing::make_program;
using journal_testing::parse_journal;
using journal_testing::Parsed;
using journal_testing::read_file;
using journal_testing::render;
using journal_testing::reset_counts;
using journal_testing::row_key;
using journal_testing::shared;
using journal_testing::TempDir;
using journal_testing::test_seed;
using journal_testing::uninterrupted;
using journal_testing::write_file;

// Resumes from every prefix of a finished journal: the outputs equal an uninterrupted
// run's, every root is delivered exactly once, and the recorded roots do not run.
TEST(Journal, ResumesFromAnyPrefix) {
  reset_counts();
  const auto expected = uninterrupted(24);
  TempDir dir;
  const std::string full = dir.file("full.journal");
  auto program = make_program();
  {
    ro::testing::SyncExecutor ex(program);
    ex.run(inputs(24), journal_options(full));
  }
  const std::string bytes = read_file(full);
  const Parsed parsed = parse_journal(bytes);
  ASSERT_EQ(parsed.keys.size(), 24u);
  const unsigned seed = test_seed("ResumesFromAnyPrefix");
  std::mt19937 rng(seed);
  std::vector<std::size_t> cuts(parsed.ends.begin(), parsed.ends.end());
  for (int i = 0; i < 10; ++i) cuts.push_back(rng() % bytes.size());  // mid-record cuts too
  for (std::size_t cut : cuts) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut) + ", seed " + std::to_string(seed));
    const std::string path = dir.file("cut.journal");
    write_file(path, bytes.substr(0, cut));
    const auto recorded = parse_journal(bytes.substr(0, cut)).keys.size();
    reset_counts();
    ro::testing::SyncExecutor ex(program);
    std::map<std::size_t, std::string> got;
    std::map<std::size_t, int> deliveries;
    auto r = ex.run(inputs(24), journal_options(path), [&](std::size_t row, auto out) {
      ++deliveries[row];
      std::vector<decltype(out)> one{out};
      got[row] = render(one)[0];
    });
    EXPECT_EQ(r.metrics.roots_restored, recorded);
    ASSERT_EQ(got.size(), 24u);
    for (std::size_t i = 0; i < 24; ++i) {
      EXPECT_EQ(deliveries[i], 1) << "row " << i;
      EXPECT_EQ(got[i], expected[i]) << "row " << i;
    }
    int untouched = 0;
    for (int i = 0; i < 24; ++i) untouched += calls(i) == 0 ? 1 : 0;
    EXPECT_EQ(static_cast<std::size_t>(untouched), recorded);
    // The resumed journal is complete now: a third run restores everything.
    reset_counts();
    EXPECT_EQ(ex.run(inputs(24), journal_options(path)).metrics.roots_restored, 24u);
  }
}

TEST(Journal, IgnoresATornTail) {
  reset_counts();
  const auto expected = uninterrupted(12);
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  ex.run(inputs(12), journal_options(path));
  const std::string bytes = read_file(path);
  const Parsed parsed = parse_journal(bytes);
  // Cut the last record in half and append garbage, as a crash mid-write might leave it.
  const std::size_t last_start = parsed.ends[parsed.ends.size() - 2];
  const std::size_t cut = last_start + (bytes.size() - last_start) / 2;
  write_file(path, bytes.substr(0, cut) + "\x13\x37 garbage");
  reset_counts();
  auto r = ex.run(inputs(12), journal_options(path));
  EXPECT_EQ(render(r.outputs), expected);
  EXPECT_EQ(r.metrics.roots_restored, 11u);
  EXPECT_EQ(r.metrics.journal_discarded_bytes, cut - last_start + 10);
  int reran = 0;
  for (int i = 0; i < 12; ++i) reran += calls(i) > 0 ? 1 : 0;
  EXPECT_EQ(reran, 1);
  // The journal was repaired: every record holds again.
  EXPECT_EQ(parse_journal(read_file(path)).ends.back(), read_file(path).size());
}

TEST(Journal, IgnoresEverythingAfterACorruptRecord) {
  reset_counts();
  const auto expected = uninterrupted(12);
  TempDir dir;
  const std::string path = dir.file("run.journal");
  auto program = make_program();
  ro::testing::SyncExecutor ex(program);
  ex.run(inputs(12), journal_options(path));
  std::string bytes = read_file(path);
  const Parsed parsed = parse_journal(bytes);
  ASSERT_EQ(parsed.ends.size(), 13u);  // header + 12 roots
  // Flip one byte inside the payload of the 9th root record: its checksum fails.
  bytes[parsed.ends[8] + 12] ^= 0x5a;
  write_file(path, bytes);
  reset_counts();
  auto r = ex.run(inputs(12), journal_options(path));
  EXPECT_EQ(render(r.outputs), expected);
  EXPECT_EQ(r.metrics.roots_restored, 8u);
  EXPECT_EQ(r.metrics.journal_discarded_bytes, bytes.size() - parsed.ends[8]);
  int reran = 0;
  for (int i = 0; i < 12; ++i) reran += calls(i) > 0 ? 1 : 0;
  EXPECT_EQ(reran, 4);
}

// A child process runs the pipeline with the journal and is killed with SIGKILL at a random
// moment; reruns continue until one finishes. The final outputs equal an uninterrupted
// run's, every root is delivered exactly once by the finishing run plus the journal, and no
// root recorded in the journal before a rerun ran in it.
TEST(Journal, SurvivesSigkillAtRandomPoints) {
  constexpr int kRows = 48;
  reset_counts();
  const auto expected = uninterrupted(kRows);
  const unsigned seed = test_seed("SurvivesSigkillAtRandomPoints");
  std::mt19937 rng(seed);
  TempDir dir;
  auto program = make_program();
  int kills = 0;
  for (int point = 0; point < 20; ++point) {
    const int delay_us = static_cast<int>(rng() % 60000);
    SCOPED_TRACE("point " + std::to_string(point) + " delay " + std::to_string(delay_us) +
                 " us, seed " + std::to_string(seed));
    const std::string path = dir.file("kill-" + std::to_string(point) + ".journal");
    const std::string out = dir.file("out-" + std::to_string(point) + ".txt");
    reset_counts();
    shared()->sleep_us = 300;
    bool finished = false;
    for (int attempt = 0; attempt < 20 && !finished; ++attempt) {
      // What the journal holds now may not run again.
      for (const std::string& k : parse_journal(read_file(path)).keys) {
        shared()->recorded[std::stoi(k.substr(4))] = 1;
      }
      const pid_t child = ::fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        int code = 0;
        try {
          ro::Executor ex(program);
          auto opts = journal_options(path);
          opts.journal.key = row_key;
          opts.journal.sync_every_records = 4;
          std::map<std::size_t, std::pair<int, std::string>> got;
          ex.run(inputs(kRows), opts, [&](std::size_t row, auto o) {
            std::vector<decltype(o)> one{o};
            ++got[row].first;
            got[row].second = render(one)[0];
          });
          std::ofstream f(out);
          for (const auto& [row, v] : got) f << row << ' ' << v.first << ' ' << v.second << '\n';
        } catch (...) {
          code = 3;
        }
        ::_exit(code);
      }
      // Kill the first attempts at a random point; let the later ones finish.
      if (attempt < 3) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      if (attempt < 3) ::kill(child, SIGKILL);
      int status = 0;
      ::waitpid(child, &status, 0);
      if (WIFSIGNALED(status)) {
        ++kills;
        continue;
      }
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed";
      finished = true;
    }
    ASSERT_TRUE(finished);
    EXPECT_EQ(shared()->violations.load(), 0) << "a root recorded finished ran again";
    std::ifstream f(out);
    std::map<std::size_t, std::string> got;
    std::size_t row = 0;
    int n = 0;
    std::string value;
    while (f >> row >> n >> value) {
      EXPECT_EQ(n, 1) << "row " << row << " delivered " << n << " times";
      EXPECT_TRUE(got.emplace(row, value).second);
    }
    ASSERT_EQ(got.size(), static_cast<std::size_t>(kRows));
    for (std::size_t i = 0; i < kRows; ++i) EXPECT_EQ(got[i], expected[i]) << "row " << i;
    const Parsed p = parse_journal(read_file(path));
    EXPECT_EQ(std::set<std::string>(p.keys.begin(), p.keys.end()).size(),
              static_cast<std::size_t>(kRows));
  }
  std::printf("SurvivesSigkillAtRandomPoints: %d children killed\n", kills);
  EXPECT_GT(kills, 0);
}

}  // namespace
