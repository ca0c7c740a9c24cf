// The worker boundary: runs one invocation on a UDF instance and turns what the UDF returned
// into a protocol Report plus the blocks it names. The only place besides the value store
// that touches payloads: it splits expanded lists into child blocks and reads mask booleans,
// so the engine can decide every rule from the report alone (DESIGN 6.2).
//
// Threading: invoke_call runs on an actor's thread; it reads the immutable plan and the
// resolved inputs, and writes nothing shared.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "rayorch/detail/erased.h"

#include "execution/value_store.h"
#include "program/plan_code.h"
#include "runtime/protocol.h"

namespace rayorch::detail {

/// What one physical attempt produced.
struct Attempt {
  /// inputs_lost: the worker could not read some input blocks (lost with their storage, a
  /// Ray node); they are re-materialised from lineage (DESIGN 5.13) and the Grains wait.
  enum class Kind { ok, failed, lost, inputs_lost } kind = Kind::ok;
  Report report;  ///< for ok (may carry a contract error)
  /// For ok: the blocks the report's invocation named, to be stored before the commit.
  std::vector<std::pair<BlockId, BlockRef>> blocks;
  std::string error;                 ///< for failed / lost / inputs_lost: "Type: message"
  std::vector<BlockId> lost_blocks;  ///< for inputs_lost: the input blocks that are gone
  std::chrono::steady_clock::time_point start;
  std::chrono::steady_clock::time_point end;
};

/// Runs `inv` on `instance` over its resolved inputs. Never throws: UDF exceptions become
/// `failed`, rayorch::ActorLost becomes `lost`.
Attempt invoke_call(const RuntimePlan& plan, const Invocation& inv, UdfInstance& instance,
                    const ResolvedInputs& inputs);

/// Turns a UDF result into the report of `inv` and the blocks it names.
Report make_report(const RuntimePlan& plan, const Invocation& inv, RpcOutput&& out,
                   std::vector<std::pair<BlockId, BlockRef>>& blocks);

/// Builds a UDF instance for `pool`; on failure returns null and sets `error`.
std::unique_ptr<UdfInstance> build_instance(const RuntimePlan& plan, int pool, std::string& error);

/// Formats the exception being handled as "Type: message".
std::string describe_current_exception();

}  // namespace rayorch::detail
