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
};

}  // namespace rayorch
