// The worker protocol: everything the driver and the workers say to each other (DESIGN 6.2).
//
// Every type here is plain data (integers, strings, vectors of them) that could cross a
// pipe or a network unchanged; protocol_codec.h turns each into bytes and back.
//
// Values. A value is addressed by a Binding (block id, row). Blocks are owned by the worker
// side: a thread pool's memory, a worker process, Ray's object store. The driver and the
// engine never hold or dereference a payload; they only pass bindings around and decide
// every rule from reports.
//
// Block ids. The engine of input batch `b` names every block it will ever refer to with
// make_block_id(b, local), `local` dense from 0: the source columns of the batch first, then
// the blocks that invocations and group compositions will create. So ids are unique within a
// run, known before the block exists (a worker creates its output blocks under the ids the
// invocation names), and the engine keeps its per-block state in a dense array.
//
// Lifetime. The engine counts, per block, the Items that still need it (an unresolved
// consumer Grain, a pending expansion, a pending output materialisation, an in-flight
// attempt). When the count reaches zero it emits a StoreCommand::release; the store then
// frees the block. So value memory is bounded by active work, not by input size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rayorch/detail/row_failure.h"

namespace rayorch::detail {

/// Names one block of values in a run.
using BlockId = std::uint64_t;

/// The id of block `local` of the engine of input batch `batch`.
constexpr BlockId make_block_id(std::size_t batch, std::uint32_t local) {
  return (static_cast<BlockId>(batch + 1) << 32) | local;
}
/// The engine-local index of a block id.
constexpr std::uint32_t block_local(BlockId id) {
  return static_cast<std::uint32_t>(id);
}
/// The input batch of a block id.
constexpr std::size_t block_batch(BlockId id) {
  return static_cast<std::size_t>(id >> 32) - 1;
}

/// The address of one value: a row of a block.
struct Binding {
  BlockId block = 0;
  std::uint32_t row = 0;
  friend bool operator==(const Binding&, const Binding&) = default;
};

/// Where one output of an RPC goes.
struct OutputSlot {
  BlockId block = 0;        ///< the block that receives the output column (one row per Grain)
  BlockId child_block = 0;  ///< expanded outputs: receives every row's list elements; else 0
  bool truth = false;       ///< report each row's boolean (the output feeds a filter mask)
  friend bool operator==(const OutputSlot&, const OutputSlot&) = default;
};

/// One RPC: a Call applied to Grains of one input batch.
struct Invocation {
  std::uint64_t id = 0;  ///< unique within its input batch's engine
  std::size_t input_batch = 0;
  int call = -1;
  std::vector<std::uint32_t> grains;         ///< Entity indices in the Call's Domain
  std::vector<std::uint32_t> generations;    ///< one per Grain
  std::vector<std::vector<Binding>> inputs;  ///< [input][row]
  std::vector<OutputSlot> outputs;           ///< one per output Port of the Call
  friend bool operator==(const Invocation&, const Invocation&) = default;
};

/// What one output of an RPC produced.
struct OutputReport {
  /// Expanded outputs: the list length of every row (0 for a failed row). The child block
  /// holds the elements of all rows in row order, so row r's element k is child row
  /// (lengths[0] + ... + lengths[r-1]) + k.
  std::vector<std::uint32_t> lengths;
  /// Outputs with `truth`: the boolean of every row (0 for a failed row).
  std::vector<std::uint8_t> truth;
  friend bool operator==(const OutputReport&, const OutputReport&) = default;
};

/// The result of one successful RPC (the UDF returned). A UDF that threw, or an actor that
/// was lost, is not a report: the driver tells the engine through fail() or lost().
struct Report {
  std::uint64_t invocation = 0;
  std::size_t input_batch = 0;
  std::vector<RowFailure> failures;   ///< failed rows, ascending
  std::vector<OutputReport> outputs;  ///< one per output, when no contract error
  std::string contract_error;         ///< non-empty: the result broke the UDF contract
  friend bool operator==(const Report&, const Report&) = default;
};

/// What the engine asks of the value store, in order.
struct StoreCommand {
  enum class Kind : std::uint8_t {
    /// Create `block` with one row: the Group of `members` (reduce `reduce`, value `value`).
    compose_group,
    /// Nothing refers to `block` any more: free it.
    release,
  };
  Kind kind = Kind::release;
  BlockId block = 0;
  int reduce = -1;
  int value = 0;
  std::vector<Binding> members;
  friend bool operator==(const StoreCommand&, const StoreCommand&) = default;
};

}  // namespace rayorch::detail
