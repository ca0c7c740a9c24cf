// The records an Engine's state is made of (runtime/engine.h): an Item, a Grain, an
// Expansion, an RPC in flight, the per-Call queues and the expand and reduce rules' state.
// Plain data, kept apart from the engine's logic; the engine is their only writer. Which
// file owns which field is said in engine.h, beside the members that hold them.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "runtime/protocol.h"

namespace rayorch::detail {

/// The state of one Item; `unresolved` until its one terminal fact is published.
enum class ItemState : std::uint8_t { unresolved, present, dropped, failed, suppressed };

/// Lifecycle of a Grain (DESIGN 5).
enum class GrainPhase : std::uint8_t { waiting, ready, in_flight, sealed };

namespace engine_records {

inline constexpr std::uint8_t kTruth = 1;     // the value is boolean true (masks)
inline constexpr std::uint8_t kReleased = 2;  // the Item no longer holds its block

// One Item of a Port: its value's binding (block, row) or the cause it carries.
struct Item {
  std::int32_t block = -1;  // engine-local block of the value; -1: none
  std::uint32_t row = 0;
  std::int32_t cause = -1;
  ItemState state = ItemState::unresolved;
  std::uint8_t flags = 0;
};

// An Item published and not yet handed to its consumers.
struct Fact {
  std::int32_t port;
  std::uint32_t entity;
};

// A failure cause, interned, and where it was decided.
struct Cause {
  std::string message;
  int call = -1;  // the deciding Grain, when a Grain decided
  std::uint32_t entity = 0;
  std::uint32_t attempts = 0;
};

// An engine-local block: who still needs it.
struct BlockState {
  std::uint32_t uses = 0;  // Items holding it plus pending expansions into it
  bool live = false;       // created and not yet released
};

// One Grain of a Call (one Entity of the Call's Domain).
struct Grain {
  std::uint32_t generation = 0;
  std::uint16_t unresolved = 0;
  std::uint16_t infra_used = 0;
  GrainPhase phase = GrainPhase::waiting;
  bool has_drop = false;
  bool has_failure = false;  // a failed input waits for lower-index inputs to decide the cause
  // The charges of waits for lost values (5.13) live in RebuildState::charges: most Grains
  // never meet a loss, and every byte here is paid by every live Grain.
};
static_assert(sizeof(Grain) == 12, "a Grain record is paid by every live Grain: keep it small");

// The children an expansion of one parent Entity created: [first, first + count).
struct Expansion {
  std::uint32_t first = 0;
  std::uint32_t count = 0;
  std::uint8_t state = 0;  // 0 unresolved, 1 succeeded, 2 dropped, 3 failed
  std::int32_t cause = -1;
};
// Where an expanded list's elements are: rows [offset, offset + length) of a child block.
struct ListSplit {
  std::int32_t block = -1;
  std::uint32_t offset = 0;
  std::uint32_t length = 0;
};

// A reduce of one parent Entity: how far its children are known.
struct ReduceProgress {
  std::uint32_t cursor = 0;  // children below this ordinal are known not to fail the group
  bool published = false;
};

// Grains queued to run again together (a retry, a split half, a re-execution).
struct RecoveryBatch {
  std::vector<std::uint32_t> grains;
  std::uint16_t retries_used = 0;
  bool tail_used = false;
  std::int32_t lineage = -1;        // a re-execution: the RPC whose rows it rebuilds
  std::vector<std::int32_t> holds;  // a re-execution: the input blocks it keeps alive
};

// An RPC in flight, as the engine reserved it.
struct InFlight {
  int call = -1;
  std::vector<std::uint32_t> grains;
  std::vector<std::uint32_t> generations;
  std::vector<OutputSlot> outputs;
  std::uint16_t retries_used = 0;
  bool tail_used = false;
  std::int32_t lineage = -1;
  std::vector<std::int32_t> holds;
};

// A Call's work: READY Grains, and recovery batches to run now or after the READY work.
struct CallQueues {
  std::deque<std::uint32_t> ready;
  std::deque<RecoveryBatch> immediate;
  std::deque<RecoveryBatch> deferred;
};

// The expand rule's state (rule_expand.cc; read by value lifetime, reduce and broadcast).
struct ExpandState {
  // Per child Domain, indexed by the parent Entity.
  std::vector<std::vector<Expansion>> expansions;
  // Per Port that is expanded (else empty), indexed by the parent Entity.
  std::vector<std::vector<ListSplit>> splits;
};

// The reduce rule's state (rule_reduce.cc; guards are counted down as Grains seal,
// engine_grains.cc).
struct ReduceState {
  // Per Domain: the reduces whose parent Domain it is.
  std::vector<std::vector<int>> into;
  // Per reduce, indexed by the parent Entity.
  std::vector<std::vector<ReduceProgress>> progress;
  // Per Call: the reduces it guards (PlanReduce::guards), and its unsealed Grains per
  // parent Entity (kept only for guard Calls).
  std::vector<std::vector<int>> guarded;
  std::vector<std::vector<std::uint32_t>> unsealed;
};

}  // namespace engine_records
}  // namespace rayorch::detail
