// The worker boundary: runs one RPC on a UDF instance and classifies what happened.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "rayorch/detail/erased.h"

#include "program/plan.h"

namespace rayorch::detail {

/// What one physical attempt produced.
struct Attempt {
  enum class Kind { ok, failed, lost } kind = Kind::ok;
  RpcOutput output;   ///< for ok (may carry a contract error)
  std::string error;  ///< for failed / lost: "Type: message"
  std::chrono::steady_clock::time_point start;
  std::chrono::steady_clock::time_point end;
};

/// Runs `call` on `instance` over the given input columns. Never throws: UDF exceptions
/// become `failed`, rayorch::ActorLost becomes `lost`.
Attempt invoke_call(const PlanCall& call, UdfInstance& instance,
                    const std::vector<std::vector<const void*>>& inputs);

/// Builds a UDF instance for `pool`; on failure returns null and sets `error`.
std::unique_ptr<UdfInstance> build_instance(const PlanPool& pool, std::string& error);

}  // namespace rayorch::detail
