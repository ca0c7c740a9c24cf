// Where the blocks of a Ray call are, on the driver: which output blocks an actor keeps
// instead of returning them (co-location, DESIGN 5.12), and which input blocks a call must
// report lost, whether Ray lost them with a node or they went with the actor that kept them
// (the engine rebuilds them from lineage, DESIGN 5.13). Used by the pools (ray_pools.cc).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "ray_blocks.h"
#include "ray_contract.h"

#include "execution/actor_block_cache.h"
#include "execution/block_store.h"
#include "execution/worker_pool.h"
#include "program/plan.h"

namespace rayorch::python {

namespace rd = rayorch::detail;

/// Per Call and output: 1 when the actor keeps the output block instead of returning it. In a
/// co-located pool, an output that only Calls of the same pool read: no expand, reduce,
/// filter, broadcast or pipeline output reads it, so the driver never needs its values.
std::vector<std::vector<char>> kept_outputs(const rd::RuntimePlan& plan);

/// The input blocks of a call that Ray reported lost: the one whose ObjectRef is `hex`, or,
/// when Ray's error names none of them, every block the call carried by ObjectRef (those the
/// actor held already were not fetched). The caller holds the GIL.
std::vector<rd::BlockId> lost_inputs(const std::vector<rd::BlockRef>& sent, const std::string& hex);

/// Has the actor of `pool` (named `pool_name`) that keeps `block` put it into the object store
/// and records its ObjectRef in the block; false when no actor holds it any more (it went with
/// its actor). Takes the GIL itself; a Python error becomes an ExecutionError.
bool export_kept(const RayBackendClient& backend, const rd::ActorBlockCache& cache, int pool,
                 const std::string& pool_name, const RemoteBlock& block);

/// The result of `task`, not sent since its input blocks `lost` went with the actor of pool
/// `pool_name` that kept them; `at` is when it was to be sent.
rd::WorkerResult lost_inputs_result(const rd::WorkerTask& task, const std::string& pool_name,
                                    std::chrono::steady_clock::time_point at,
                                    std::vector<rd::BlockId> lost);

}  // namespace rayorch::python
