// Where the blocks of a Ray call are, on the driver. See ray_block_locality.h.
#include "ray_block_locality.h"

#include <utility>

#include "ray_blocks.h"
#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "rayorch/errors.h"

namespace nb = nanobind;

namespace rayorch::python {

std::vector<std::vector<char>> kept_outputs(const rd::RuntimePlan& plan) {
  std::vector<std::vector<char>> out(plan.calls.size());
  for (std::size_t c = 0; c < plan.calls.size(); ++c) {
    const rd::PlanCall& call = plan.calls[c];
    out[c].assign(call.outputs.size(), 0);
    if (plan.pools[call.pool].members < 2) continue;
    for (std::size_t k = 0; k < call.outputs.size(); ++k) {
      const rd::PlanPort& port = plan.ports[call.outputs[k]];
      bool kept = !port.is_output && port.expanded_by < 0 && !port.consumers.empty();
      for (const rd::Consumer& consumer : port.consumers) {
        kept = kept && consumer.kind == rd::ConsumerKind::call_input &&
               plan.calls[consumer.op].pool == call.pool;
      }
      out[c][k] = kept ? 1 : 0;
    }
  }
  return out;
}

std::vector<rd::BlockId> lost_inputs(const std::vector<rd::BlockRef>& sent,
                                     const std::string& hex) {
  std::vector<rd::BlockId> all;
  for (const rd::BlockRef& b : sent) {
    const RemoteBlock& block = remote(b);
    if (!hex.empty() && nb::cast<std::string>(nb::handle(block.ref()).attr("hex")()) == hex)
      return {block.id()};
    all.push_back(block.id());
  }
  return all;
}

bool export_kept(const RayBackendClient& backend, const rd::ActorBlockCache& cache, int pool,
                 const std::string& pool_name, const RemoteBlock& block) {
  const int holder = cache.holder(pool, block.id());
  if (holder < 0) return false;
  Gil gil;  // held across the call, so a Python error is handled and dropped with it
  try {
    block.set_exported(backend.export_block(pool, holder, block.id()));
  } catch (const nb::python_error& e) {
    throw ExecutionError(fmt::format(
        "exporting a kept block from a Ray actor of pool {} failed: {}", pool_name, e.what()));
  }
  return true;
}

rd::WorkerResult lost_inputs_result(const rd::WorkerTask& task, const std::string& pool_name,
                                    std::chrono::steady_clock::time_point at,
                                    std::vector<rd::BlockId> lost) {
  rd::WorkerResult r;
  r.run = task.run;
  r.pool = task.pool;
  r.slot = task.slot;
  r.current = true;
  rd::Attempt& a = r.attempt;
  a.kind = rd::Attempt::Kind::inputs_lost;
  a.report.invocation = task.invocation.id;
  a.report.input_batch = task.invocation.input_batch;
  a.error = fmt::format(
      "ValueLost: {} input block(s) of the call were kept by an actor of pool {} that is gone",
      lost.size(), pool_name);
  a.lost_blocks = std::move(lost);
  a.start = at;
  a.end = std::chrono::steady_clock::now();
  return r;
}

}  // namespace rayorch::python
