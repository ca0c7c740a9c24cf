// A sink across SIGKILL (docs/IO.md): a child process runs the three-level pipeline (expand,
// expand, filter, reduce, reduce) with a journal and a JSON-lines sink and is killed at a
// random moment (while staging, committing, between a rename and its journal record, or
// during a resume), then resumed until a run finishes. Every present root is then in exactly
// one committed part, the parts equal an uninterrupted run's outputs, the directory holds
// nothing but the committed parts and the manifest, and no root the journal recorded
// finished ran again. With threads and with the recognising stage in worker processes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/journal_testing.h"
#include "support/sink_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace {

namespace ro = rayorch;
namespace jt = journal_testing;
using sink_testing::Contents;
using sink_testing::read_records;
using sink_testing::read_sink;

void survive_kills(const char* test, bool process) {
  constexpr int kRows = 40;
  jt::reset_counts();
  const auto expected = sink_testing::uninterrupted(kRows, 1);
  const unsigned seed = jt::test_seed(test);
  std::mt19937 rng(seed);
  jt::TempDir dir;
  auto program = sink_testing::make_program(process);
  int kills = 0;
  int kills_in_resume = 0;  // a resume was killed
  int after_rename = 0;     // a kill left a part renamed into place but not committed
  for (int point = 0; point < 20; ++point) {
    const int delay_us = static_cast<int>(rng() % 250000);
    SCOPED_TRACE("point " + std::to_string(point) + " delay " + std::to_string(delay_us) +
                 " us, seed " + std::to_string(seed));
    const std::string journal = dir.file("kill-" + std::to_string(point) + ".journal");
    const std::string out = dir.file("out-" + std::to_string(point));
    jt::reset_counts();
    jt::shared()->sleep_us = 2000;
    jt::shared()->fail_mod = 1;
    bool finished = false;
    for (int attempt = 0; attempt < 20 && !finished; ++attempt) {
      // What the journal counts finished now may not run again (failed roots do: retry_failed).
      const sink_testing::Records records = read_records(jt::read_file(journal));
      for (const std::string& k : records.finished) {
        const int root = std::stoi(k.substr(4));
        if (root % 10 >= 1) jt::shared()->recorded[root] = 1;
      }
      for (const std::string& part : records.uncommitted) {
        after_rename += std::filesystem::exists(out + "/" + part) ? 1 : 0;
      }
      const pid_t child = ::fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        int code = 0;
        try {
          ro::Executor ex(program);
          auto opts = sink_testing::sink_options(journal, out, 3);
          opts.journal.sync_every_records = 4;
          ex.run(jt::inputs(kRows), opts, [](std::size_t, auto) {});
        } catch (...) {
          code = 3;
        }
        ::_exit(code);
      }
      // Kill the first attempts at a random point (the later of them during a resume); let
      // the later ones finish.
      if (attempt < 3) {
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us / (attempt + 1)));
        ::kill(child, SIGKILL);
      }
      int status = 0;
      ::waitpid(child, &status, 0);
      if (WIFSIGNALED(status)) {
        ++kills;
        kills_in_resume += attempt > 0 ? 1 : 0;
        continue;
      }
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed";
      finished = true;
    }
    ASSERT_TRUE(finished);
    EXPECT_EQ(jt::shared()->violations.load(), 0) << "a root recorded finished ran again";
    const Contents c = read_sink(out);
    ASSERT_TRUE(c.have_manifest);
    EXPECT_TRUE(c.complete && c.success_marker);
    EXPECT_EQ(c.rows.count(~std::size_t{0}), 0u) << "a part's row count differs from the manifest";
    std::size_t present = 0;
    for (std::size_t r = 0; r < expected.size(); ++r) {
      const auto it = c.rows.find(r);
      if (expected[r].front() != '[') {
        EXPECT_EQ(it, c.rows.end()) << "failed row " << r << " in a part";
        continue;
      }
      ++present;
      ASSERT_NE(it, c.rows.end()) << "row " << r << " is in no part";
      ASSERT_EQ(it->second.size(), 1u) << "row " << r << " is in the parts more than once";
      EXPECT_EQ(it->second[0], expected[r]) << "row " << r;
    }
    EXPECT_EQ(c.rows.size(), present);
    std::set<std::string> want(c.parts.begin(), c.parts.end());
    want.insert({"_manifest.json", "_SUCCESS"});
    EXPECT_EQ(c.files, want) << "a temporary or uncommitted part was left";
  }
  std::printf(
      "%s: %d children killed, %d of them resuming; %d kills left a part renamed but not "
      "committed\n",
      test, kills, kills_in_resume, after_rename);
  EXPECT_GT(kills, 0);
  EXPECT_GT(kills_in_resume, 0);
}

TEST(Sink, EveryRootInExactlyOneCommittedPartAfterSigkills) {
  survive_kills("EveryRootInExactlyOneCommittedPartAfterSigkills", false);
}

TEST(Sink, EveryRootInExactlyOneCommittedPartAfterSigkillsWithWorkerProcesses) {
  survive_kills("EveryRootInExactlyOneCommittedPartAfterSigkillsWithWorkerProcesses", true);
}

}  // namespace
