// The worker server of a local executor's process-isolated pools (docs/ISOLATION.md): the one
// single-threaded process that forks every worker, and how it comes to life.
//
// A C++ program's server is forked from a dedicated thread of the executor's process, so it
// and its workers inherit the compiled plan (the default). A front end whose code cannot be
// forked out of a running process gives a WorkerServerLaunch instead: the Python package
// starts a fresh interpreter that compiles the same pipeline again and then calls
// serve_worker_requests() (python/rayorch_cpp/_worker_server.py). Either way the executor
// talks to the server, and the server forks, kills and reaps workers, in exactly the same way.
#pragma once

#include <sys/types.h>

#include <functional>

#include "program/plan.h"

namespace rayorch::detail {

/// The exit code of a worker whose allocation failed under its memory limit (a worker loss
/// that its cause reports as such).
inline constexpr int kMemoryLimitExit = 86;

/// How the worker server starts when it is not forked from the executor's process.
struct WorkerServerLaunch {
  /// Starts the server process and returns its pid; throws ExecutionError when it cannot.
  /// Called on the executor's keeper thread (the server's parent-death signal is tied to
  /// it), with `socket` (the server's end of its packet socket), `stderr_fd` (a memory file
  /// that the executor reads when the server fails to start) and this process's pid, which
  /// the server passes to serve_worker_requests(). The child must be a direct child of this
  /// process and keep no other descriptor of it. Empty: fork the server (the default).
  std::function<pid_t(int socket, int stderr_fd, pid_t parent)> spawn;
};

/// What a launched server's process needs around each fork of a worker. The Python package
/// uses these for the interpreter's own fork protocol (PyOS_BeforeFork and the like), and
/// `in_worker` to tell the new worker which replica it is before its constructor runs.
struct WorkerForkHooks {
  std::function<void()> before_fork;                     ///< in the server
  std::function<void()> after_fork_in_server;            ///< in the server, after a fork
  std::function<void(int pool, int replica)> in_worker;  ///< in the new worker, first
};

struct WorkerServerOptions {
  /// Close every descriptor above the server's and the workers' own (a forked server's
  /// descriptors are the executor's, which its workers must not hold). A launched server
  /// opened its descriptors itself, and its runtime may still use them.
  bool close_other_descriptors = true;
  WorkerForkHooks hooks;
};

/// The server's loop: tells the executor on `fd` that it is ready, then forks a worker per
/// request (which builds its pool's UDF instance and serves tasks), kills workers when
/// asked, reports their exits, and when the executor's socket closes kills and reaps every
/// worker and exits. Ends the process if its parent is no longer `parent`. Never returns.
[[noreturn]] void serve_worker_requests(const RuntimePlan& plan, int fd, pid_t parent,
                                        const WorkerServerOptions& options);

}  // namespace rayorch::detail
