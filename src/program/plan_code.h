// The typed code behind a RuntimePlan: UDF invokers and factories, list accessors for
// expand, group builders for reduce. Only the worker boundary (src/execution) includes this
// header; the runtime decides every rule from reports and never touches a payload.
#pragma once

#include <vector>

#include "rayorch/detail/erased.h"
#include "rayorch/detail/erased_codec.h"

#include "program/plan.h"

namespace rayorch::detail {

struct PlanCode {
  std::vector<Invoker> invokers;                ///< per Call
  std::vector<Factory> factories;               ///< per pool
  std::vector<std::vector<ListOps>> list_ops;   ///< per expand, per list
  std::vector<std::vector<GroupMaker>> makers;  ///< per reduce, per value
  std::vector<CallCodecs> codecs;               ///< per Call (process-isolated pools)
};

}  // namespace rayorch::detail
