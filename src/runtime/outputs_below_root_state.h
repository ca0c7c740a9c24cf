// The state the engine keeps for outputs below the root: a Port of a child Domain that is a
// pipeline output (the Python package's reference semantics; the C++ API gathers instead).
// Each root delivers the Items of that Port that descend from it, in coordinate order, once
// every one of them is terminal; what is still unresolved below each root is counted here.
// Plain data, owned by the Engine (engine_outputs_below_root.cc is its one writer).
//
// Invariant: pending[r] is the number of expansions on the way to an output below the root
// and of such output Items (one per listing) that descend from root r and are not resolved
// yet. A root is finished when its root-Domain outputs are terminal and pending[r] is 0.
#pragma once

#include <cstdint>
#include <vector>

namespace rayorch::detail {

struct OutputsBelowRootState {
  bool any = false;  ///< some output lives below the root
  /// Listings of root-Domain Ports among the outputs (a Port listed twice counts twice).
  std::uint16_t root_listings = 0;
  /// Per Domain: the expands out of it whose child Domain leads to an output below the root.
  std::vector<std::vector<int>> expands_toward;
  /// Per Domain: listings of its Ports among the outputs (0 for the root Domain).
  std::vector<std::uint32_t> listings;
  /// Per output listing: the Domains from the root's child down to the Port's (empty for a
  /// root-Domain Port).
  std::vector<std::vector<int>> paths;
  /// Per batch-local root: expansions and output Items below it not resolved yet.
  std::vector<std::uint32_t> pending;
};

}  // namespace rayorch::detail
