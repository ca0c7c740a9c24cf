// Options of a Module: how its pool is sized, batched, resourced and recovered (DESIGN 3.2).
// Plain data, shared by the front end, the compiler and the runtime.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

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
  int replicas = 1;                         ///< actors in the Module's pool (>= 1)
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
};

}  // namespace rayorch
