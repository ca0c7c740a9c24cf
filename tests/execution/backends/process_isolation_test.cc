// Process-isolated actors (DESIGN 6.3, docs/ISOLATION.md): a UDF that crashes, aborts,
// allocates without bound under a memory limit or hangs costs only its worker process. The
// run finishes, exactly the poisoned Grain is FAILED with a cause naming what happened, every
// other output equals the thread-backed run, no child process remains afterwards, and the
// executor runs again. A constructor that throws or crashes fails the first run, thread
// pools still abort on a lost actor, and killing the executor's process leaves no worker
// behind. Values crossing through their codecs are in process_isolation_values_test.cc.
// Not part of the sanitizer subsets: fork, RLIMIT_AS and sanitizers do not mix.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/executor_testing.h"
#include "support/isolation_testing.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

namespace ro = rayorch;
using executor_testing::TempDir;
using isolation_testing::Poison;
using isolation_testing::quiet;

namespace {

std::vector<int> read_pids(const std::string& path) {
  std::vector<int> pids;
  std::ifstream in(path);
  for (int p; in >> p;) pids.push_back(p);
  return pids;
}

// Field `index` of /proc/PID/stat, numbered as in proc(5) (from 3, after the command).
std::string stat_field(int pid, int index) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream rest(text.substr(close + 2));
  // Numbered as in proc(5): the state is field 3, the parent pid field 4.
  std::string field;
  for (int i = 3; i <= index && rest >> field; ++i) {
  }
  return field;
}

// Processes whose parent is this test process (from /proc, zombies included).
std::vector<int> children_of_this_process() {
  std::vector<int> out;
  const std::string self = std::to_string(::getpid());
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (stat_field(std::stoi(name), 4) == self) out.push_back(std::stoi(name));
  }
  return out;
}

bool process_exists(int pid) {
  return std::filesystem::exists("/proc/" + std::to_string(pid));
}

struct Inc {
  std::vector<int> run(ro::Column<int> x) {
    std::vector<int> out;
    for (int v : x) out.push_back(v + 1);
    return out;
  }
};

struct Case {
  std::string mode;
  int trigger = -1;
  bool isolated = true;
  std::uint64_t memory_limit = 0;
  std::chrono::milliseconds timeout{0};
  std::string pid_file;
};

auto program_for(const Case& s) {
  ro::Module<Inc> inc;  // stays on threads
  auto poison = ro::Module<Poison>(s.mode, s.trigger, s.pid_file)
                    .replicas(2)
                    .batch_size(4)
                    .timeout(s.timeout);
  if (s.isolated) poison.isolation(ro::Isolation::process).memory_limit(s.memory_limit);
  return ro::compile([&](ro::Port<int> x) { return poison(inc(x)); });
}

std::vector<int> inputs() {
  std::vector<int> in;
  for (int i = 0; i < 20; ++i) in.push_back(i);
  return in;
}

// The thread-backed run without any trigger: what every untouched row must produce.
std::vector<std::string> reference() {
  Case s;
  s.isolated = false;
  ro::Executor ex(program_for(s));
  auto r = ex.run(inputs(), quiet());
  std::vector<std::string> out;
  for (const auto& o : r.outputs) out.push_back(o.value());
  return out;
}

// Runs `s` twice on one executor (row 7 holds input 7 -> inc -> 8 = trigger) and checks the
// contract of an isolated loss, then that no process is left.
void expect_contained(Case s, const std::string& cause) {
  TempDir dir;
  s.pid_file = dir.file("pids");
  s.trigger = 8;
  const std::vector<std::string> expected = reference();
  {
    ro::Executor ex(program_for(s));
    for (int round = 0; round < 2; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      auto r = ex.run(inputs(), quiet());
      ASSERT_EQ(r.outputs.size(), expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i) {
        if (i == 7) continue;
        ASSERT_TRUE(r.outputs[i].ok()) << i << ": " << r.outputs[i].issue().cause;
        EXPECT_EQ(r.outputs[i].value(), expected[i]) << i;
      }
      ASSERT_FALSE(r.outputs[7].ok());
      EXPECT_EQ(r.outputs[7].issue().outcome, ro::Outcome::failed);
      EXPECT_NE(r.outputs[7].issue().cause.find(cause), std::string::npos)
          << r.outputs[7].issue().cause;
      if (s.mode != "hang") {
        // The worker's stderr tail is part of the cause.
        EXPECT_NE(r.outputs[7].issue().cause.find("poison: about to " + s.mode + " on 8"),
                  std::string::npos)
            << r.outputs[7].issue().cause;
      }
      EXPECT_GE(r.metrics.actors_replaced, 2u);
    }
  }
  const std::vector<int> pids = read_pids(s.pid_file);
  EXPECT_GE(pids.size(), 3u);  // two workers plus at least one replacement
  for (int pid : pids) {
    EXPECT_NE(pid, ::getpid()) << "the UDF ran in the executor's process";
    EXPECT_FALSE(process_exists(pid)) << "worker " << pid << " outlived the executor";
  }
  EXPECT_TRUE(children_of_this_process().empty());
}

}  // namespace

TEST(ProcessIsolation, SegmentationFaultFailsOnlyThatGrain) {
  Case s;
  s.mode = "segv";
  expect_contained(s, "worker crashed: SIGSEGV");
}

TEST(ProcessIsolation, AbortFailsOnlyThatGrain) {
  Case s;
  s.mode = "abort";
  expect_contained(s, "worker crashed: SIGABRT");
}

TEST(ProcessIsolation, ExitFailsOnlyThatGrain) {
  Case s;
  s.mode = "exit";
  expect_contained(s, "worker exited with status 3");
}

TEST(ProcessIsolation, SigkillFromOutsideFailsOnlyThatGrain) {
  Case s;
  s.mode = "sigkill";
  expect_contained(s, "worker was killed: SIGKILL (possibly the out-of-memory killer)");
}

TEST(ProcessIsolation, RunawayAllocationUnderAMemoryLimitFailsOnlyThatGrain) {
  Case s;
  s.mode = "alloc";
  s.memory_limit = std::uint64_t{256} << 20;
  expect_contained(s, "worker exceeded its memory limit (256 MiB)");
}

TEST(ProcessIsolation, HangPastTheTimeoutFailsOnlyThatGrain) {
  Case s;
  s.mode = "hang";
  s.timeout = std::chrono::milliseconds(300);
  expect_contained(s, "rayorch::Timeout: the RPC ran past the 300 ms timeout");
}

TEST(ProcessIsolation, ThreadPoolsStillAbortTheRunOnALostActorBeyondBudget) {
  // The splitting is the isolated pools' contract only: on threads, an exhausted
  // infrastructure budget stops the run as before.
  struct Loses {
    std::vector<int> run(ro::Column<int> x) {
      for (int v : x) {
        if (v == 3) throw ro::ActorLost("gone");
      }
      return x.to_vector();
    }
  };
  ro::Module<Loses> loses;
  auto program = ro::compile([&](ro::Port<int> x) { return loses(x); });
  ro::Executor ex(program);
  EXPECT_THROW(ex.run({1, 2, 3, 4}, quiet()), ro::ExecutionError);
}

TEST(ProcessIsolation, ActorLostRaisedInAWorkerIsIsolatedLikeACrash) {
  struct Loses {
    std::vector<int> run(ro::Column<int> x) {
      for (int v : x) {
        if (v == 3) throw ro::ActorLost("the device went away");
      }
      return x.to_vector();
    }
  };
  ro::Module<Loses> loses = ro::Module<Loses>().batch_size(2).isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<int> x) { return loses(x); });
  ro::Executor ex(program);
  auto r = ex.run({1, 2, 3, 4}, quiet());
  EXPECT_EQ(r.outputs[0].value(), 1);
  EXPECT_EQ(r.outputs[1].value(), 2);
  EXPECT_EQ(r.outputs[3].value(), 4);
  ASSERT_FALSE(r.outputs[2].ok());
  EXPECT_EQ(r.outputs[2].issue().outcome, ro::Outcome::failed);
  EXPECT_NE(r.outputs[2].issue().cause.find("the device went away"), std::string::npos)
      << r.outputs[2].issue().cause;
}

TEST(ProcessIsolation, AConstructorThatThrowsFailsTheFirstRunWithItsMessage) {
  struct Broken {
    Broken() { throw std::runtime_error("no model file"); }
    std::vector<int> run(ro::Column<int> x) { return x.to_vector(); }
  };
  ro::Module<Broken> broken = ro::Module<Broken>().isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<int> x) { return broken(x); });
  try {
    ro::Executor ex(program);
    ex.run(std::vector<int>{1}, {.progress = false});
    FAIL() << "the executor ran";
  } catch (const ro::ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("no model file"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(children_of_this_process().empty());
}

TEST(ProcessIsolation, AConstructorThatCrashesFailsTheFirstRunNamingTheSignal) {
  struct Crashes {
    Crashes() { std::raise(SIGSEGV); }
    std::vector<int> run(ro::Column<int> x) { return x.to_vector(); }
  };
  ro::Module<Crashes> crashes = ro::Module<Crashes>().isolation(ro::Isolation::process);
  auto program = ro::compile([&](ro::Port<int> x) { return crashes(x); });
  try {
    ro::Executor ex(program);
    ex.run(std::vector<int>{1}, {.progress = false});
    FAIL() << "the executor ran";
  } catch (const ro::ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("worker crashed: SIGSEGV"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(children_of_this_process().empty());
}

TEST(ProcessIsolation, MemoryLimitWithoutIsolationIsACompileError) {
  ro::Module<Inc> inc = ro::Module<Inc>().memory_limit(1 << 20);
  EXPECT_THROW(ro::compile([&](ro::Port<int> x) { return inc(x); }), ro::CompileError);
}

TEST(ProcessIsolation, KillingTheExecutorProcessLeavesNoWorkerBehind) {
  // Orphans of the killed process are re-parented to this one, so it can reap them and see
  // each one go.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  TempDir dir;
  const std::string pid_file = dir.file("pids");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The executor's process: its workers hang on the first row until it is killed.
    Case s;
    s.mode = "hang";
    s.trigger = 1;
    s.pid_file = pid_file;
    {
      ro::Executor ex(program_for(s));
      ex.run({0, 1, 2, 3}, quiet());
    }
    std::_Exit(0);
  }
  // Wait (bounded) until both workers have started.
  std::vector<int> pids;
  for (int i = 0; i < 3000 && pids.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    pids = read_pids(pid_file);
  }
  ASSERT_EQ(pids.size(), 2u);
  std::set<int> tracked(pids.begin(), pids.end());
  const int server = std::stoi(stat_field(pids[0], 4));
  EXPECT_NE(server, child);  // the workers' parent is the fork server, a child of `child`
  EXPECT_EQ(stat_field(server, 4), std::to_string(child));
  tracked.insert(server);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  // Every tracked process dies (the death signal) and is reaped here; bounded watchdog.
  for (int i = 0; i < 3000; ++i) {
    while (::waitpid(-1, &status, WNOHANG) > 0) {
    }
    bool any = false;
    for (int pid : tracked) any = any || process_exists(pid);
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int pid : tracked) EXPECT_FALSE(process_exists(pid)) << pid << " survived";
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}
