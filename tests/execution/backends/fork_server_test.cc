// The worker server started another way (execution/worker_server.h): a WorkerServerLaunch
// whose server serves the same requests, tells each worker which replica it is before its
// constructor runs, runs the fork hooks around every fork, and whose failure to start is
// an ExecutionError carrying its stderr. The forked server (the default) is covered by
// process_isolation_test.cc. Not part of the sanitizer subsets (fork).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

#include "execution/cores.h"
#include "execution/worker_server.h"

namespace ro = rayorch;
namespace rd = rayorch::detail;

namespace {

// The replica and the fork count this worker was told by the hooks (as environment
// variables: the worker is a process of its own).
struct Told {
  Told() : replica(env("WORKER_REPLICA")), before(env("FORKS_BEFORE")) {}
  std::vector<std::string> run(ro::Column<int> x) {
    std::vector<std::string> out;
    for (int v : x) out.push_back(std::to_string(v) + " replica " + replica + " after " + before);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return out;
  }
  static std::string env(const char* name) {
    const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): set before the fork
    return v != nullptr ? v : "-";
  }
  std::string replica;
  std::string before;
};

auto program() {
  auto told = ro::Module<Told>().replicas(2).batch_size(1).isolation(ro::Isolation::process);
  return ro::compile([&](ro::Port<int> x) { return told(x); });
}

template <class P>
class LaunchedExecutor : public rd::RunApiOf<P> {
 public:
  LaunchedExecutor(const ro::Compiled<P>& p, const rd::WorkerServerLaunch& launch)
      : rd::RunApiOf<P>(rd::make_local_core(p.plan(), launch)) {}
};

template <class P>
LaunchedExecutor<P> launched(const ro::Compiled<P>& p, const rd::WorkerServerLaunch& launch) {
  return LaunchedExecutor<P>(p, launch);
}

ro::RunOptions quiet() {
  ro::RunOptions o;
  o.progress = false;
  return o;
}

}  // namespace

TEST(WorkerServerLaunch, TheLaunchedServerTellsEachWorkerItsReplicaAndRunsTheForkHooks) {
  const auto p = program();
  rd::WorkerServerLaunch launch;
  launch.spawn = [plan = p.plan()](int socket, int, pid_t parent) {
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    // The server's side, as a front end's own server program would run it.
    static int forks = 0;
    rd::WorkerServerOptions options;
    options.close_other_descriptors = false;
    options.hooks.before_fork = [] {
      ++forks;
      ::setenv("FORKS_BEFORE", std::to_string(forks).c_str(), 1);
    };
    options.hooks.after_fork_in_server = [] { ::setenv("FORKS_BEFORE", "cleared", 1); };
    options.hooks.in_worker = [](int pool, int replica) {
      ::setenv("WORKER_REPLICA", (std::to_string(pool) + "/" + std::to_string(replica)).c_str(), 1);
    };
    rd::serve_worker_requests(*plan, socket, parent, options);
  };
  auto ex = launched(p, launch);
  ex.await_actors();
  std::set<std::string> replicas;
  std::set<std::string> forks;
  // Eager start: the second actor may join after the first run ended; runs go on until both
  // replicas have worked (each call takes a few ms, so a ready actor gets some).
  for (int run = 0; run < 50 && replicas.size() < 2; ++run) {
    const auto r = ex.run(std::vector<int>{1, 2, 3, 4, 5, 6}, quiet());
    for (const auto& o : r.outputs) {
      ASSERT_TRUE(o.ok()) << o.issue().cause;
      const std::string& v = o.value();
      replicas.insert(v.substr(v.find("replica ") + 8, 3));
      forks.insert(v.substr(v.find("after ") + 6));
    }
  }
  // Each replica of pool 0 is a worker of its own, told its index; the hook before each fork
  // ran in the server (one count per fork), the one after it ran in the server only.
  EXPECT_EQ(replicas, (std::set<std::string>{"0/0", "0/1"}));
  EXPECT_EQ(forks, (std::set<std::string>{"1", "2"}));
}

TEST(WorkerServerLaunch, AServerThatEndsBeforeItIsReadyIsAnErrorWithItsStderr) {
  rd::WorkerServerLaunch launch;
  launch.spawn = [](int, int stderr_fd, pid_t) {
    const pid_t pid = ::fork();
    if (pid != 0) return pid;
    const std::string line = "cannot import module 'ocr_models'\n";
    const ssize_t ignored = ::write(stderr_fd, line.data(), line.size());
    (void)ignored;
    ::_exit(3);
  };
  try {
    auto ex = launched(program(), launch);
    FAIL() << "the executor was built";
  } catch (const ro::ExecutionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("worker server for process-isolated Modules did not start (worker "
                        "exited with status 3)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("cannot import module 'ocr_models'"), std::string::npos) << what;
  }
}

TEST(WorkerServerLaunch, ALaunchThatThrowsIsAnError) {
  rd::WorkerServerLaunch launch;
  launch.spawn = [](int, int, pid_t) -> pid_t {
    throw ro::ExecutionError("no interpreter at /nowhere/python");
  };
  try {
    auto ex = launched(program(), launch);
    FAIL() << "the executor was built";
  } catch (const ro::ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "cannot start worker processes: no interpreter at /nowhere/python"),
              std::string::npos)
        << e.what();
  }
}
