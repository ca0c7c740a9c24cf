// The Ray backend's store of one run's blocks, on the driver (DESIGN 6.3).
//
// It keeps no payloads: every block is an ObjectRef in Ray's object store (a source slice is
// put there when its input batch is admitted; each call's output blocks come back from the
// actor as objects of their own), a group is the list of its members' bindings (a group of
// groups spelt out down to its values, with its nesting), and a payload is fetched only to
// materialise the run's outputs.
//
// What it guarantees the actors' block records (execution/actor_block_cache.h): block ids
// are unique within a run, and a block released here is never read again in that run (a
// group member is released only with the last group that reads it).
//
// Threading: the driver's thread only; it takes the GIL itself for every Python object.
#pragma once

#include <memory>

#include "ray_contract.h"

#include "execution/actor_block_cache.h"
#include "execution/block_store.h"

namespace rayorch::python {

/// The store of one run on the pools behind `backend`; `cache` is the pools' record of which
/// blocks each actor holds, which the store tells about every release.
std::unique_ptr<rd::BlockStore> make_ray_store(RayBackendClient backend,
                                               std::shared_ptr<rd::ActorBlockCache> cache);

}  // namespace rayorch::python
