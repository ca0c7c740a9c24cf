// The Ray backend (DESIGN 6.3): each Module's pool is a set of persistent Ray actors, driven
// through the package's Python module rayorch_cpp._ray_backend (Ray's Python API).
//
// Driver side. make_ray_pools() is one more WorkerPools implementation under the one driver
// (execution/driver.h). Its store (a BlockStore) keeps no payloads: every block is an
// ObjectRef in Ray's object store (a source slice is put there when its input batch is
// admitted; each RPC's output column comes back from the actor as one object), a group is
// the list of its members' bindings, and a payload is fetched only to materialise the run's
// outputs. An RPC ships the invocation's protocol bytes plus the ObjectRefs of the blocks it
// reads; the driver receives the report object only (protocol bytes: lengths, masks,
// failures) and keeps the ObjectRefs of the output blocks.
//
// Queued calls. A pool may keep several calls at each actor (the Module option
// max_tasks_in_flight_per_actor): one running, the others queued behind it in Ray, so that
// Ray's round trip of the next call overlaps the running one. Each queued call is one more
// worker of the driver's (worker k * actors + a runs on actor a); the actor runs them in
// the order sent. A lost actor fails all its calls: the first report replaces it, the others
// replay without replacing its successor (each call records the actor's incarnation).
//
// Actor side. RayWorker runs on a Ray actor: it builds the pool's UDF instance from the same
// compiled program (the actor compiles the pipeline again), resolves the invocation's
// bindings in the blocks Ray hands it, runs the Call through the worker boundary
// (execution/invoke.h) and returns the report and one list per output block.
//
// Threading: the driver-side objects are used from the driver's thread only and take the GIL
// themselves for every Python call (the driver runs with the GIL released).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include <nanobind/nanobind.h>

#include "execution/worker_pool.h"
#include "program/plan_code.h"

namespace rayorch::python {

class PyBlock;  // py_values.h

/// The Ray worker pools of `plan`. `backend` is a started rayorch_cpp._ray_backend.RayBackend
/// (every actor's constructor has finished); the pools drive it and own nothing else.
std::unique_ptr<detail::WorkerPools> make_ray_pools(std::shared_ptr<const detail::RuntimePlan> plan,
                                                    nanobind::object backend);

/// One actor's worker: the UDF instance of one pool, the blocks its RPCs brought, and the
/// code that runs its RPCs.
class RayWorker {
 public:
  /// Builds the UDF instance of `pool`; throws ExecutionError when its constructor fails.
  RayWorker(std::shared_ptr<const detail::RuntimePlan> plan, int pool);

  /// Runs one RPC. `task` holds the protocol bytes of the Invocation, the ids of the blocks
  /// to drop, of the blocks held from earlier RPCs and of `blocks`, and the group inputs
  /// (little-endian; see ray_pools.cc); `blocks` are the input blocks this actor does not
  /// hold yet (one list of values each), which it keeps. Returns a tuple: a status tuple (kind,
  /// report bytes or error text, start, end: wall-clock seconds, fatal error) and then one list per
  /// output block of the invocation (None for each when the attempt failed).
  nanobind::tuple run(nanobind::bytes task, nanobind::args blocks);

  /// How many blocks this actor holds from earlier RPCs.
  std::size_t cached_blocks() const { return cache_.size(); }

 private:
  std::shared_ptr<const detail::RuntimePlan> plan_;
  int pool_;
  std::unique_ptr<detail::UdfInstance> instance_;
  // The blocks earlier RPCs brought, by id, until the driver says to drop them
  // (actor_block_cache.h). Holds Python objects: used with the GIL held.
  std::unordered_map<std::uint64_t, std::shared_ptr<PyBlock>> cache_;
};

}  // namespace rayorch::python
