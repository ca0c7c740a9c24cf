// Options of a Module: how its pool is sized, batched, resourced and recovered (DESIGN 3.2).
// Plain data, shared by the front end, the compiler and the runtime.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>

#include "rayorch/recovery.h"

namespace rayorch {

/// How a Call's reservation picks Grains from its READY queue.
enum class Reservation : std::uint8_t {
  elastic,       ///< the queue head in order, mixing parents (default)
  parent_bound,  ///< up to batch_size siblings of the first ready parent
};

/// Where a Module's actors run.
enum class Isolation : std::uint8_t {
  threads,  ///< threads of the executor's process (default)
  /// One child process per actor: a crash, an abort or a runaway allocation in the UDF
  /// costs that worker, not the process (docs/ISOLATION.md). Values cross through
  /// rayorch::Codec; the local executor honours it, testing::SyncExecutor runs in-process.
  process,
};

/// Options of a Module (DESIGN 3.2). Validated when the pipeline is compiled.
struct ModuleOptions {
  int replicas = 1;  ///< actors in the Module's pool (>= 1); unused when auto_replicas
  /// The pool sizes itself between min_replicas and max_replicas within the executor's
  /// resource budget (DESIGN 6.1.7).
  bool auto_replicas = false;
  int min_replicas = 0;  ///< auto only: actors kept while work can still reach the pool (>= 0)
  /// auto only: the most actors (>= 1, >= min_replicas); 0: the machine's CPU count (the
  /// budget still caps what is started).
  int max_replicas = 0;
  int batch_size = 1;                       ///< max Grains per RPC (>= 1)
  double cpus = 1.0;                        ///< CPUs per actor (>= 0), a scheduling hint
  double gpus = 0.0;                        ///< GPUs per actor (>= 0), a scheduling hint
  std::map<std::string, double> resources;  ///< named resources per actor (each >= 0)
  RecoveryPolicy recovery;                  ///< physical-failure handling (default abort)
  int infra_retries = 1;                    ///< replays per Grain after a lost actor (>= 0)
  std::chrono::milliseconds timeout{0};     ///< per-RPC deadline; 0 means none
  /// How long an idle actor may wait for a fuller batch while upstream work for the Call is
  /// still pending (never when nothing more can arrive); 0 means never wait (default).
  std::chrono::milliseconds batch_wait{0};
  Reservation reservation = Reservation::elastic;
  Isolation isolation = Isolation::threads;  ///< threads or child processes
  /// Isolated pools only: bytes each worker process may allocate beyond what it inherited;
  /// exceeding it costs the worker (its Grains are replayed, then isolated). 0: no limit.
  std::uint64_t memory_limit = 0;
  /// Modules that name the same group share one pool (DESIGN 5.12): each of its actors holds
  /// one instance of every member and runs their Calls, so a value one member makes and the
  /// next reads need not leave the actor's process (the Ray backend keeps it there). The
  /// members must agree on every option of the pool (replicas, resources, timeout, isolation,
  /// batch_wait, reservation, ...); batch_size, recovery and infra_retries stay per Call.
  /// Empty: the Module has a pool of its own (default).
  std::string colocate;
};

/// What the self-sizing pools of one executor may hold at once (DESIGN 6.1.7),
/// counted in the per-actor cpus/gpus/resources of every pool's started actors (fixed pools
/// included). Consulted only when some pool sizes itself.
struct ResourceBudget {
  double cpus = 0.0;  ///< 0: the machine's CPU count
  double gpus = 0.0;
  std::map<std::string, double>
      resources;  ///< named resources (a pool needing one absent here cannot start)
};

/// True when the pool sizes itself (auto_replicas).
inline bool sizes_itself(const ModuleOptions& o) {
  return o.auto_replicas;
}
/// The most actors a self-sizing pool may start: max_replicas, or when it is 0 one per CPU of
/// this machine (at least min_replicas); the executor's budget still caps what it starts.
inline int resolved_max_replicas(const ModuleOptions& o) {
  if (o.max_replicas > 0) return o.max_replicas;
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max({1, o.min_replicas, cpus});
}
/// The actor slots a pool has: its replicas, or the most a self-sizing pool may start.
inline int pool_slots(const ModuleOptions& o) {
  return sizes_itself(o) ? resolved_max_replicas(o) : o.replicas;
}

}  // namespace rayorch
