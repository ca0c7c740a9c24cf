// The Ray backend (DESIGN 6.3): each Module's pool is a set of persistent Ray actors, driven
// through the package's Python module rayorch_cpp._ray_backend (Ray's Python API) under the
// contract of ray_contract.h / rayorch_cpp._ray_contract.
//
// Driver side. make_ray_pools() is one more WorkerPools implementation under the one driver
// (execution/driver.h). Its store (ray_store.h) keeps ObjectRefs, not payloads. A call ships
// its task bytes (ray_wire.h) plus the ObjectRefs of the blocks the actor does not hold yet
// (execution/actor_block_cache.h); the driver fetches the call's CallReport only and keeps
// the ObjectRefs of its output blocks.
//
// Task slots. A pool may keep several tasks in flight at each actor (the Module option
// max_tasks_in_flight_per_actor): one running, the others queued behind it in Ray, so that
// Ray's round trip of the next task overlaps the running one. Each actor has that many task
// slots, and each task slot is one worker of the driver's: worker (pool, slot) is task slot
// slot / actors of actor slot % actors. The actor runs its tasks in the order sent. A lost
// actor fails all its tasks: the first report replaces it, the others replay without
// replacing its successor (each task records the actor's incarnation).
//
// Actor side: ray_worker.h. The extension binds it and the contract types (module.cc includes
// this header for both).
//
// Threading: the driver-side objects are used from the driver's thread only and take the GIL
// themselves for every Python call (the driver runs with the GIL released).
#pragma once

#include <memory>

#include "ray_contract.h"
#include "ray_worker.h"
#include <nanobind/nanobind.h>

#include "execution/worker_pool.h"
#include "program/plan_code.h"

namespace rayorch::python {

/// The Ray worker pools of `plan`. `backend` is a rayorch_cpp._ray_backend.RayBackend whose
/// actors may still be starting (eager start: their starts come through take_actor_events), or
/// any RayBackendProtocol; the pools drive it and own nothing else.
std::unique_ptr<detail::WorkerPools> make_ray_pools(std::shared_ptr<const detail::RuntimePlan> plan,
                                                    nanobind::object backend);

}  // namespace rayorch::python
