// Small helpers shared by the engine's implementation files (engine.cc, engine_*.cc,
// rule_*.cc). Not part of the engine's interface.
#pragma once

#include <cstdint>

#include "rayorch/outcome.h"

#include "runtime/engine.h"

namespace rayorch::detail {

/// No Entity: the parent of a root Entity, or no parent chosen yet.
inline constexpr std::uint32_t kNoEntity = 0xFFFFFFFFu;

inline Outcome to_outcome(ItemState s) {
  switch (s) {
    case ItemState::present:
      return Outcome::present;
    case ItemState::dropped:
      return Outcome::dropped;
    case ItemState::failed:
      return Outcome::failed;
    default:
      return Outcome::suppressed;
  }
}

inline bool is_failure(ItemState s) {
  return s == ItemState::failed || s == ItemState::suppressed;
}

}  // namespace rayorch::detail
