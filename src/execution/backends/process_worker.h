// Process-isolated workers (DESIGN 6.3): the worker process's loop, and the executor's side
// of one worker, which a proxy thread of the thread pools drives exactly like a UDF instance.
//
// One task crosses as one frame each way (process_wire.h): the invocation (protocol_codec)
// plus its input rows encoded by the Call's codecs; back come the report, which the worker
// made itself (so expansion lengths and mask booleans are the worker's), and the rows of the
// blocks it created. The executor decodes them into blocks of its value store. A value is
// written by its encoder straight into the shared arena and copied by its decoder out of it
// (a codec that only takes std::string& adds a copy from a scratch string).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "execution/backends/fork_server.h"
#include "execution/backends/spin_then_sleep.h"
#include "execution/invoke.h"
#include "execution/worker_pool.h"

namespace rayorch::detail {

/// The worker process's main: builds pool `pool`'s UDF instance, then serves tasks on
/// descriptor `fd` (payloads through the arena `arena_fd`) until the stream ends.
/// Never returns.
[[noreturn]] void run_worker(const RuntimePlan& plan, int pool, int fd, int arena_fd);

/// The last lines (at most 2 KiB, from a line start) of the captured stderr `fd`, for a
/// failure cause; "" when there is none.
std::string stderr_tail(int fd);

/// How a worker's end reads in a failure cause ("worker crashed: SIGSEGV").
std::string describe_worker_exit(int wait_status, std::uint64_t memory_limit);

/// The executor's side of one worker slot of an isolated pool: the current worker process,
/// restarted after a loss. Used by one proxy thread, except abandon().
class ProcessWorker {
 public:
  /// The worker slot of replica `replica` of pool `pool`.
  ProcessWorker(std::shared_ptr<ForkServer> forks, std::shared_ptr<const RuntimePlan> plan,
                int pool, int replica);
  ~ProcessWorker();
  ProcessWorker(const ProcessWorker&) = delete;
  ProcessWorker& operator=(const ProcessWorker&) = delete;

  /// Starts a fresh worker process (killing the previous one) and waits until its
  /// constructor has run. Returns "" or why no worker could be made.
  std::string start();
  /// Runs one task on the worker. A worker that dies gives Attempt::Kind::lost with a cause
  /// naming how it ended plus the tail of its stderr; the caller then start()s a new one.
  Attempt call(const WorkerTask& task);
  /// From any thread: this slot is abandoned; kill the worker process now and any started
  /// later. A call() in progress then returns lost.
  void abandon();
  /// True once abandon() was called.
  bool abandoned();

 private:
  std::string loss_cause(const std::string& what_happened);
  std::string stderr_tail();
  void trim_stderr();

  std::shared_ptr<ForkServer> forks_;
  std::shared_ptr<const RuntimePlan> plan_;
  int pool_;
  int replica_;
  SpawnedWorker worker_;
  std::string out_;  // reused frame buffers
  std::string in_;
  std::string scratch_;              // reused by codecs that only write to a std::string
  SpinThenSleep answer_{kWirePoll};  // a quick UDF's answer is taken awake (process_wire.h)
  std::mutex mutex_;                 // guards pid_ and abandoned_ (abandon() comes from the driver)
  pid_t pid_ = -1;
  bool abandoned_ = false;
};

}  // namespace rayorch::detail
