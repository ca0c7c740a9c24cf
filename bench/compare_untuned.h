// The untuned regime of `bench compare`: one CPU budget, this project's self-sizing pools
// (replicas="auto") against every fixed allocation of a grid that spends the same budget, each
// run of the grid on the measured corpus with the local executor (bench compare-system).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench.h"
#include "compare_results.h"
#include "systems.h"
#include "workload.h"
#include <nlohmann/json.hpp>

namespace rayorch::bench {

/// One fixed allocation of the budget: actors per stage, one CPU each.
struct Allocation {
  int render = 0;
  int ocr = 0;
  int assemble = 0;
};

/// Every allocation with a render count of `renders` and an assemble count of `assembles`
/// whose OCR stage gets the rest of `budget_cpus` (at least one actor), in the given orders.
/// Throws std::invalid_argument when none is left.
std::vector<Allocation> allocation_grid(int budget_cpus, const std::vector<int>& renders,
                                        const std::vector<int>& assembles);

/// The grid's runs: the E2E of each allocation (or why it did not count) and the fastest.
struct AllocationGrid {
  struct Point {
    Allocation allocation;
    bool ran = false;
    double e2e = 0;
    std::string error;
  };
  std::vector<Point> points;
  std::optional<std::size_t> best;  ///< the fastest point that ran with identical outputs
  std::string text;                 ///< the grid as a table, and the fastest
  nlohmann::json json;
};

/// Writes a corpus file for a topology (the measured documents, the workload's costs).
using CorpusWriter = std::function<void(const Topology&, const std::filesystem::path&)>;

/// Runs `system` (this project's local executor, or a peer: its best tuned allocation) once
/// per allocation of `grid` with fixed pools (a peer at the allocation's actor counts, never
/// at its own defaults); each run's outputs are checked against `pages` (a run with any
/// difference does not count).
AllocationGrid run_allocation_grid(const SystemEnv& env, const SystemSpec& system,
                                   const std::vector<Allocation>& grid, const Topology& base,
                                   const std::vector<std::uint32_t>& pages,
                                   const CorpusWriter& write_corpus);

/// A peer's grid (CompareOptions::peer_grid).
struct PeerGrid {
  std::string label;  ///< the peer's, at the grid's actor counts
  AllocationGrid grid;
};

/// The untuned regime's targets, added to `rep`, `targets` and `lines`: the local executor
/// with self-sizing pools (`systems[0]`, `sums[0]`) within 5 % of the grid's fastest fixed
/// allocation, and this project's system `mine` (on Ray when it ran) ahead of every peer,
/// each at the allocation it was given. With `peer_grids`, `mine` is also set against each
/// peer's fastest allocation of the grid (a comparison, not a target).
void untuned_targets(const AllocationGrid& grid, const std::vector<PeerGrid>& peer_grids,
                     const std::vector<SystemSpec>& systems, const std::vector<Summary>& sums,
                     std::size_t mine, Report& rep, nlohmann::json& targets, std::string& lines);

/// Per Call of one result of bench compare-system ("calls": busy seconds and the actors its
/// pool held over the run): a text plot of the actors held (a digit per column of `width`
/// over the run; '+' for 10 or more) and the busy share of the actor-seconds held. Empty when
/// the result has no "calls".
std::string calls_over_time(const nlohmann::json& calls, int width = 60);

}  // namespace rayorch::bench
