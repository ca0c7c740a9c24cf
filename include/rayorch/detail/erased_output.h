// A root's outputs as an executor core hands them over, untyped: shared by the typed run()
// (rayorch/detail/executor_impl.h) and the sinks' part writers (rayorch/sink.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "rayorch/outcome.h"

namespace rayorch::detail {

/// One root row's output Item as handed over by an executor core.
struct ErasedOutput {
  Outcome outcome = Outcome::dropped;
  const std::string* cause = nullptr;
  const void* value = nullptr;
  std::optional<IssueOrigin> origin{};
  /// An output below the root (a Port of a child Domain; Python pipelines only): this entry
  /// stands for the output, and the `children` entries after it are the root's descendants'
  /// Items of it, in coordinate order.
  bool below_root = false;
  std::uint32_t children = 0;
};

}  // namespace rayorch::detail
