// The actor side of the Ray backend (DESIGN 6.3). RayWorker runs on a Ray actor: it builds the
// pool's UDF instance from the same compiled program (the actor compiles the pipeline again),
// keeps the blocks its calls brought until the driver says to drop them, resolves each
// call's bindings in those blocks, runs the Call through the worker boundary
// (execution/invoke.h) and returns the CallReport (ray_contract.h) and one list per output
// block.
//
// Threading: one call at a time (the actor's thread); Python objects are used with the GIL
// held, and the GIL is released while the Call runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "py_values.h"
#include <nanobind/nanobind.h>

#include "execution/invoke.h"
#include "program/plan_code.h"

namespace rayorch::python {

class RayWorker {
 public:
  /// Builds the UDF instance of `pool`; throws ExecutionError when its constructor fails.
  RayWorker(std::shared_ptr<const rd::RuntimePlan> plan, int pool);

  /// Runs one call. `task` is its task bytes (ray_wire.h); `blocks` are the input blocks this
  /// actor does not hold yet (one list of values each, in the order of the task's sent ids),
  /// which it keeps. Returns a tuple: the CallReport, then one list per output block of the
  /// invocation (None for each when the call did not produce them).
  nanobind::tuple run(nanobind::bytes task, nanobind::args blocks);

  /// The values of block `id`, which this actor keeps (an output it kept, DESIGN 5.12, or an
  /// input it was sent), as one list: what the driver exports for a reader elsewhere.
  nanobind::list exported(std::uint64_t id) const;

  /// How many blocks this actor holds from earlier calls.
  std::size_t cached_blocks() const { return cache_.size(); }

 private:
  std::shared_ptr<const rd::RuntimePlan> plan_;
  int pool_;
  std::unique_ptr<rd::UdfInstance> instance_;
  // The blocks earlier calls brought, by id, until the driver says to drop them
  // (execution/actor_block_cache.h). Holds Python objects: used with the GIL held.
  std::unordered_map<std::uint64_t, std::shared_ptr<PyBlock>> cache_;
};

}  // namespace rayorch::python
