// The state the engine keeps to re-materialise values lost with their storage (DESIGN 5.13):
// the lineage of every block (which RPC's Grains, which group, which source column made it),
// where the rows of a re-materialised block went, and the work waiting for a rebuild.
// Plain data, owned by the Engine (engine_rebuild.cc is its one writer).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/protocol.h"

namespace rayorch::detail {

/// How a block was made: what re-materialising it runs again.
struct BlockLineage {
  enum class Kind : std::uint8_t { unknown, source, output, child, group };
  Kind kind = Kind::unknown;
  std::uint32_t index = 0;   ///< source: the column; output, child: the RPC; group: the reduce
  std::uint32_t output = 0;  ///< output, child: the Call's output; group: the value
  std::uint32_t parent = 0;  ///< group: the parent Entity
};

/// One RPC that committed: its Grains in row order and the blocks it named.
struct LineageRpc {
  int call = -1;
  std::vector<std::uint32_t> grains;
  std::vector<OutputSlot> outputs;
  /// Per output (empty unless expanded), per row: (offset, length) of its list in the child
  /// block.
  std::vector<std::vector<std::pair<std::uint32_t, std::uint32_t>>> lists;
};

/// Where the rows of a block that was re-materialised live now: per old row, the block and
/// row that hold it (block -1: not rebuilt, the old row stands; kUnrebuildable: it could not
/// be rebuilt, `cause` says why).
struct Redirect {
  static constexpr std::int32_t kUnrebuildable = -2;
  std::vector<std::int32_t> block;
  std::vector<std::uint32_t> row;
  std::vector<std::int32_t> cause;
};

/// Grains waiting until the values they read are rebuilt: readers (their RPC found an input
/// lost, or a reservation found one known lost) or re-executions (`lineage` >= 0, the RPC
/// whose rows they rebuild).
struct ParkedBatch {
  int call = -1;
  std::vector<std::uint32_t> grains;
  std::int32_t lineage = -1;
  std::uint16_t retries_used = 0;
  bool tail_used = false;
};

/// A group value to compose again once its members are available.
struct GroupStep {
  std::int32_t block = -1;  ///< the group block being replaced
  int reduce = -1;
  int value = 0;
  std::uint32_t parent = 0;
};

struct RebuildState {
  std::vector<LineageRpc> rpcs;
  std::vector<BlockLineage> lineage;  ///< per engine-local block
  std::vector<std::uint8_t> lost;     ///< per engine-local block: a worker could not read it
  /// per engine-local block: made again for a lost one (a re-execution's output, a group
  /// composed again, a source column put again). Losing one of these is a repeated loss.
  std::vector<std::uint8_t> remade;
  std::map<std::int32_t, Redirect> redirects;
  /// (block, row) whose re-materialisation is under way.
  std::set<std::pair<std::int32_t, std::uint32_t>> pending;
  /// (Call, Entity) re-executions queued or in flight.
  std::set<std::pair<int, std::uint32_t>> grains;
  /// (Call, Entity) -> waits for (or re-executions of) lost values charged to that Grain,
  /// against its Call's infra_retries; only Grains that met a loss have an entry.
  std::map<std::pair<int, std::uint32_t>, std::uint16_t> charges;
  std::map<std::uint32_t, std::vector<std::uint32_t>> queued;  ///< per RPC: Grains to run again
  std::vector<ParkedBatch> parked;
  std::vector<GroupStep> groups;
  /// Finished roots (batch-local) whose outputs were lost before delivery: finished again
  /// once their outputs are rebuilt.
  std::vector<std::uint32_t> roots;
  /// Source columns to put again: (column, new block).
  std::vector<std::pair<std::uint32_t, BlockId>> sources;
  std::string reason;            ///< the last loss reported, for causes
  bool active = false;           ///< a loss was ever reported: reservations check their inputs
  std::uint64_t values = 0;      ///< values re-materialised
  std::uint64_t reexecuted = 0;  ///< Grains re-executed for it
};

}  // namespace rayorch::detail
