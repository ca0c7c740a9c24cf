// The fork server: how process-isolated workers are started safely from a multi-threaded
// executor (docs/ISOLATION.md).
//
// Mechanism. Forking a multi-threaded process copies only the forking thread; a lock that
// another thread held at that moment stays locked forever in the child. So workers are not
// forked from the executor. When the pools are built, before any of their worker threads
// start, a dedicated thread forks one fork server; the server stays single-threaded and forks
// every worker on request. Workers inherit the compiled plan from it (UDF factories,
// invokers and codecs), so no program has to be re-executed or loaded. Limits: a lock held by
// some other thread of the process (one the executor did not start) at the moment the fork
// server is forked remains held in the server and in every worker; glibc's malloc is
// re-initialised across fork, other libraries' locks are not. The fork server holds only
// descriptors 0-2 and its socket; workers only 0-2 and theirs. A front end that cannot be
// forked gives a WorkerServerLaunch (execution/worker_server.h): the dedicated thread then
// spawns the server, which rebuilds the plan itself and keeps its own descriptors, and
// waits for it as for a forked one. Either server says it is ready before the first request.
//
// Lifetime. The dedicated thread lives as long as the server: it reads the server's messages
// and reaps it. PR_SET_PDEATHSIG(SIGKILL) ties the server to that thread and each worker to
// the server (both check getppid() right after, closing the race with an early death), so
// killing the executor's process with SIGKILL kills the server and then every worker. The
// server reaps its workers and reports their wait status; on shutdown (its socket closes) it
// kills and reaps every worker, then exits, and the dedicated thread reaps it. No zombie or
// orphan remains.
//
// Threading: spawn, kill and exit_status may be called from any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "execution/backends/process_wire.h"
#include "execution/worker_server.h"
#include "program/plan.h"

namespace rayorch::detail {

/// A worker process as the executor sees it.
struct SpawnedWorker {
  pid_t pid = -1;
  UniqueFd socket;    ///< the executor's end of the worker's stream socket
  UniqueFd err;       ///< the worker's stderr (a memory file, append-only)
  SharedArena arena;  ///< frame payloads, both ways (process_wire.h)
};

class ForkServer {
 public:
  /// Starts the fork server from a new dedicated thread (forked, or through `launch`) and
  /// waits until it is ready. Throws ExecutionError, with a launched server's stderr tail
  /// when it failed to start.
  explicit ForkServer(std::shared_ptr<const RuntimePlan> plan, WorkerServerLaunch launch = {});
  ~ForkServer();
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  /// Starts a worker process for replica `replica` of `pool`: it builds its UDF instance and
  /// then serves tasks on its socket (process_worker.h). Throws ExecutionError when the
  /// server is gone.
  SpawnedWorker spawn(int pool, int replica);
  /// Kills worker `pid` with SIGKILL unless it has already exited (the server decides, so a
  /// reused pid is never hit).
  void kill(pid_t pid);
  /// The wait status of worker `pid` once the server has reaped it, waiting at most `limit`;
  /// nullopt when it is not known by then. Forgets it.
  std::optional<int> exit_status(pid_t pid, std::chrono::milliseconds limit);
  /// Kills and reaps every worker and the server. Idempotent; never throws.
  void shutdown() noexcept;
  /// The server's pid (for tests and diagnostics).
  pid_t pid() const { return server_pid_; }

 private:
  void keeper_main(std::shared_ptr<const RuntimePlan> plan, const WorkerServerLaunch& launch);

  std::mutex mutex_;
  std::condition_variable cv_;
  UniqueFd socket_;  // the executor's end of the server's packet socket
  pid_t server_pid_ = -1;
  bool started_ = false;
  bool gone_ = false;  // the server exited or was shut down
  std::string start_error_;
  std::uint64_t next_request_ = 0;
  std::map<std::uint64_t, pid_t> spawned_;  // request -> pid (-1: the fork failed)
  std::map<pid_t, int> exits_;              // pid -> wait status
  std::thread keeper_;
};

}  // namespace rayorch::detail
