// The semantic engine of one input batch: the single writer of its Entities, Items,
// Expansions, lineage and Grain states (DESIGN 5). No threads, no I/O, no payloads: the
// execution layer drives it through reserve / commit / fail / lost and advance, in the
// plain-data terms of the worker protocol (protocol.h). Values are bindings; the engine
// counts who still needs each block and asks the store to free it (take_store_commands).
//
// Threading: one thread at a time (the driver's). Ownership: the engine owns its state; the
// plan is shared and immutable.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "rayorch/outcome.h"
#include "rayorch/run_options.h"

#include "program/plan.h"
#include "runtime/engine_records.h"
#include "runtime/outputs_below_root_state.h"
#include "runtime/protocol.h"
#include "runtime/rebuild_state.h"

namespace rayorch::detail {

/// Lifecycle events a Grain can undergo; used by the transition table.
enum class GrainEvent : std::uint8_t {
  inputs_ready,     ///< every input PRESENT
  inputs_terminal,  ///< inputs decided the outcome without READY (failure or drop)
  suppress,         ///< a barrier or a failed RPC seals it
  reserve,          ///< taken into an RPC
  commit,           ///< its report committed
  requeue,          ///< retry or replay at generation + 1
};

/// The next phase for (phase, event), or nullopt when the edge is illegal.
std::optional<GrainPhase> grain_transition(GrainPhase phase, GrainEvent event);

/// Options of one engine.
struct EngineOptions {
  std::size_t batch_index = 0;
  QueueOrder queue_order = QueueOrder::fifo;
  std::optional<Reservation> reservation;  ///< overrides each pool's policy when set
  /// The Entity key root of each of the batch's rows: the caller's row when the run
  /// computes a subset of the rows (a resumed journal); empty: first_row + row.
  std::vector<std::size_t> root_keys;
  /// Keeps the lineage of every committed RPC (its Grains, output blocks and list offsets),
  /// which rebuilding a lost value needs (DESIGN 5.13). Only a backend whose values can be
  /// lost needs it (BlockStore::can_lose_values); without it, every committed RPC costs
  /// nothing beyond its facts, and a loss reported to the engine is a std::logic_error.
  bool record_lineage = true;
};

/// What the engine asks of the executor after a failure report.
struct FailureVerdict {
  bool abort = false;
  std::string message;  ///< for abort: names Call, UDF, Grains with generations and the error
};

/// Why an actor was lost: a timeout means the UDF did not return, which (unlike a dead actor
/// of a thread pool) points at its inputs, so past the replay budget it is a UDF failure.
enum class Loss { actor, timeout };

/// Result of committing a report.
enum class CommitStatus : std::uint8_t { accepted, stale, contract_error };

class Engine {
 public:
  /// Source column c of this batch is block make_block_id(batch_index, c), one row per
  /// source row. `source_truth[c]` holds the booleans of column c when the plan says the
  /// column needs_truth (else it may be empty).
  Engine(std::shared_ptr<const RuntimePlan> plan, EngineOptions options, std::size_t first_row,
         std::size_t rows, const std::vector<std::vector<std::uint8_t>>& source_truth = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// Drains pending facts to a fixed point.
  void advance();

  /// True when the Call has queued work (possibly stale entries).
  bool has_work(int call) const;
  /// Reserves up to the Call's batch_size Grains (of READY work, at most `max_ready` when
  /// above 0: the tail split, execution/run/tail_split.h), or nullopt when none is
  /// dispatchable. Recovery batches keep their own size.
  std::optional<Invocation> reserve(int call, std::size_t max_ready = 0);

  /// Commits the report of a successful RPC. Validated as a whole before anything is
  /// published. A stale report's blocks (`created`, those its worker made) are released.
  /// On contract_error, `report.contract_error` says what was wrong.
  CommitStatus commit(Report& report, const std::vector<BlockId>& created);
  /// The UDF threw: seals barriered Grains, then applies the Call's RecoveryPolicy.
  FailureVerdict fail(std::uint64_t rpc_id, const std::string& error);
  /// The actor was lost (or timed out): replays the Grains at a higher generation within
  /// each Grain's infrastructure budget. Beyond it the run aborts, except for a Call of a
  /// process-isolated pool: its batch is split in halves (deferred), and a lone Grain is
  /// sealed FAILED with `reason` as its cause; and except for a timeout in any other pool,
  /// which is then a UDF failure with `reason` as its error, under the Call's RecoveryPolicy.
  FailureVerdict lost(std::uint64_t rpc_id, const std::string& reason, Loss loss = Loss::actor);
  /// The worker could not read `blocks` (lost with their storage, e.g. a Ray node): they are
  /// re-materialised from lineage (DESIGN 5.13) and the RPC's Grains wait for them, each
  /// within its infrastructure budget; past it a Grain is FAILED with `reason` as its cause.
  void inputs_lost(std::uint64_t rpc_id, const std::vector<BlockId>& blocks,
                   const std::string& reason);
  /// The store could not read `blocks`, which hold outputs of the finished batch-local
  /// `root`, to deliver them: they are re-materialised (DESIGN 5.13) and the root is
  /// finished again (take_finished_roots) once every output it has is readable; an output
  /// that cannot be rebuilt is then FAILED with a cause naming the loss.
  void outputs_lost(std::uint32_t root, const std::vector<BlockId>& blocks,
                    const std::string& reason);
  /// True when the Call has a re-execution queued (DESIGN 5.13).
  bool has_reexecution(int call) const;
  /// True when the in-flight RPC re-executes Grains to re-materialise lost values.
  bool rebuilding(std::uint64_t rpc_id) const;
  /// Source columns to put into the store again, as (column, block): a rebuild reads them.
  std::vector<std::pair<std::uint32_t, BlockId>> take_source_restores();
  /// Values re-materialised and Grains re-executed for it so far.
  std::uint64_t values_rebuilt() const { return rebuild_.values; }
  std::uint64_t grains_reexecuted() const { return rebuild_.reexecuted; }

  /// True when all work is done and every output Item is terminal.
  bool complete() const;
  /// True when incomplete with nothing pending, in flight or dispatchable.
  bool stuck() const;
  /// A deadlock description with progress counters.
  std::string deadlock_report() const;
  /// Set when the data broke a runtime contract (aligned lengths): the run must abort.
  const std::string& fatal_error() const { return fatal_; }

  /// Root rows (batch-local) whose outputs all became terminal since the last call.
  std::vector<std::uint32_t> take_finished_roots();
  /// The output Items of a batch-local root row, in output order; a binding is meaningful
  /// only where the outcome is present. An output below the root (output_below_root) gives
  /// the root's descendants' Items of its Port, in coordinate order: `items[k]` of them
  /// (1 for a root-Domain output), one after the other.
  void root_outputs(std::uint32_t root, std::vector<Outcome>& outcomes,
                    std::vector<const std::string*>& causes, std::vector<Binding>& values,
                    std::vector<std::uint32_t>& items) const;
  /// True when output `k` is a Port of a child Domain (OutputsBelowRootState).
  bool output_below_root(std::size_t k) const { return below_.any && !below_.paths[k].empty(); }
  /// Where the cause of the `i`-th Item of output `k` of a batch-local root (in root_outputs'
  /// order) was decided (false: no Grain did).
  bool root_issue_origin(std::uint32_t root, std::size_t k, std::size_t i,
                         IssueOrigin& origin) const;
  /// The root's outputs were materialised: their values are no longer needed.
  void root_delivered(std::uint32_t root);

  /// What the value store must do, in order (group compositions, releases); emptied.
  std::vector<StoreCommand> take_store_commands();
  /// Blocks this engine holds alive now (for tests and memory accounting).
  std::size_t live_blocks() const { return live_blocks_; }

  /// Prints an Entity of a Domain as its ordinal path from the source row, e.g. "7/3".
  std::string entity_key(int domain, std::uint32_t entity) const;
  /// The same key without allocating: returns the source row's key (7) and writes the
  /// ordinals below it into `ordinals` from the Entity up (3), at most its size; `depth` is
  /// how many there are in all.
  std::uint64_t entity_path(int domain, std::uint32_t entity, std::span<std::uint32_t> ordinals,
                            std::size_t& depth) const;
  /// Batch index and row range.
  std::size_t batch_index() const { return options_.batch_index; }
  std::size_t first_row() const { return first_row_; }
  std::size_t rows() const { return rows_; }
  const RuntimePlan& plan() const { return p_; }
  /// Number of RPCs in flight.
  std::size_t in_flight() const { return in_flight_.size(); }

  /// Counters for metrics and progress.
  struct CallCounters {
    std::uint64_t requeues = 0;
    std::uint64_t suppressed_by_barrier = 0;
    std::uint64_t sealed = 0;
    std::uint64_t total = 0;
  };
  const CallCounters& counters(int call) const { return counters_[call]; }
  std::uint64_t grains_total() const { return grains_total_; }
  std::uint64_t grains_sealed() const { return grains_sealed_; }
  std::uint64_t stale_reports() const { return stale_reports_; }
  /// Values freed so far because nothing needed them any more (value lifetime).
  std::uint64_t values_released() const { return values_released_; }
  std::size_t ready_count(int call) const;
  /// True while more READY work may still reach `call` in this input batch: a Call upstream
  /// of it (RuntimePlan::call_consumers) has Grains that are not sealed yet.
  bool upstream_unsealed(int call) const;

  /// The state of one Item of a Port (read-only; for tests and diagnostics).
  ItemState item_state(int port, std::uint32_t entity) const { return items_[port][entity].state; }
  /// The cause carried by one Item, or null when it has none.
  const std::string* item_cause(int port, std::uint32_t entity) const {
    const std::int32_t c = items_[port][entity].cause;
    return c >= 0 ? &causes_[c].message : nullptr;
  }
  /// The binding of one PRESENT Item (block 0 when it has none).
  Binding item_binding(int port, std::uint32_t entity) const {
    const Item& it = items_[port][entity];
    return it.block >= 0 ? bound(it.block, it.row) : Binding{};
  }
  /// True when an Item's value was released (nothing needs it any more).
  bool item_released(int port, std::uint32_t entity) const {
    return (items_[port][entity].flags & kReleased) != 0;
  }
  /// Number of Entities created so far in a Domain.
  std::size_t entities(int domain) const { return parent_[domain].size(); }
  /// The root Entity (this batch's row index) an Entity of `domain` descends from.
  std::uint32_t root_entity(int domain, std::uint32_t entity) const {
    return root_of(domain, entity);
  }
  /// The children the expansion `expand` made of `parent` (an Entity of its parent Domain),
  /// or nothing while unresolved or when the list was dropped or failed.
  std::optional<std::uint32_t> expansion_children(int expand, std::uint32_t parent) const {
    const Expansion& x = expand_.expansions[p_.expands[expand].child_domain][parent];
    if (x.state != 1) return std::nullopt;
    return x.count;
  }
  /// The lifecycle phase and generation of one Grain.
  GrainPhase grain_phase(int call, std::uint32_t entity) const {
    return grains_[call][entity].phase;
  }
  std::uint32_t grain_generation(int call, std::uint32_t entity) const {
    return grains_[call][entity].generation;
  }

 private:
  // The implementation is split by responsibility; each group below names the file that
  // defines its functions and owns its state.

  // The records the state below is made of (runtime/engine_records.h).
  static constexpr std::uint8_t kTruth = engine_records::kTruth;
  static constexpr std::uint8_t kReleased = engine_records::kReleased;
  using Item = engine_records::Item;
  using Fact = engine_records::Fact;
  using Cause = engine_records::Cause;
  using BlockState = engine_records::BlockState;
  using Grain = engine_records::Grain;
  using Expansion = engine_records::Expansion;
  using ListSplit = engine_records::ListSplit;
  using ReduceProgress = engine_records::ReduceProgress;
  using RecoveryBatch = engine_records::RecoveryBatch;
  using InFlight = engine_records::InFlight;
  using CallQueues = engine_records::CallQueues;
  using ExpandState = engine_records::ExpandState;
  using ReduceState = engine_records::ReduceState;

  // ---- Facts and lineage (engine_facts.cc) ----
  void create_entities(int domain, std::uint32_t count, std::uint32_t parent);
  void publish(int port, std::uint32_t entity, ItemState state, std::int32_t block,
               std::uint32_t row, std::int32_t cause, std::uint8_t flags = 0);
  void publish_failure(int port, std::uint32_t entity, ItemState state, std::int32_t cause) {
    publish(port, entity, state, -1, 0, cause);
  }
  std::int32_t intern(std::string cause, int call = -1, std::uint32_t entity = 0);
  std::uint32_t ancestor_in(int domain, std::uint32_t entity, int ancestor_domain) const;

  // ---- Outputs below the root (engine_outputs_below_root.cc) ----
  void init_outputs_below_root();
  // Entities [first, first + count) of `domain` were created under `parent`.
  void below_root_created(int domain, std::uint32_t first, std::uint32_t count,
                          std::uint32_t parent);
  // The expansion of `parent` (of the expand's parent Domain) resolved.
  void below_root_expanded(int expand, std::uint32_t parent);
  // An Item of an output Port of a child Domain resolved.
  void below_root_output(int port, std::uint32_t entity);
  // A root-Domain output Item of `root` resolved (once per listing).
  void root_output_resolved(std::uint32_t root);
  void maybe_finish_root(std::uint32_t root);
  // The Entities of output `k`'s Port that descend from `root`, in coordinate order.
  void output_entities(std::uint32_t root, std::size_t k, std::vector<std::uint32_t>& out) const;
  std::uint32_t root_of(int domain, std::uint32_t entity) const {
    return domain == 0 ? entity : ancestor_in(domain, entity, 0);
  }

  // ---- Value lifetime (engine_lifetime.cc) ----
  std::int32_t new_block();
  BlockId block_id(std::int32_t local) const {
    return make_block_id(options_.batch_index, static_cast<std::uint32_t>(local));
  }
  void make_live(std::int32_t block);
  void drop_use(std::int32_t block);
  void release_if_unused(std::int32_t block);
  bool value_needed(int port, std::uint32_t entity) const;
  void maybe_release(int port, std::uint32_t entity);
  void release_grain_inputs(int call, std::uint32_t entity);
  void release_reduce_members(int reduce, std::uint32_t parent);

  // ---- The Grain state machine and barriers (engine_grains.cc) ----
  void move_grain(int call, std::uint32_t entity, GrainEvent event);
  void seal_grain(int call, std::uint32_t entity, ItemState outputs_state, std::int32_t cause,
                  GrainEvent event);
  void seal_suppressed_by_barrier(int call, std::uint32_t entity);
  void grain_sealed(int call, std::uint32_t entity);
  std::uint32_t barrier_key(int call, std::uint32_t entity) const;
  std::int32_t barrier_cause(int call, std::uint32_t entity) const;
  void set_barrier(int call, std::uint32_t entity, std::int32_t cause);

  // ---- Structural rules (rule_call_input.cc, rule_expand.cc, rule_reduce.cc,
  //      rule_filter.cc, rule_broadcast.cc) ----
  void on_call_input(int call, std::uint32_t entity, const Item& item);
  void on_expand_list(int expand, std::uint32_t parent);
  void on_reduce_fact(int reduce, std::uint32_t child);
  void advance_reduce(int reduce, std::uint32_t parent);
  void settle_reduce(int reduce, std::uint32_t parent);
  void publish_reduce(int reduce, std::uint32_t parent, ItemState state, std::int32_t cause);
  void on_filter(int filter, std::uint32_t entity);
  void on_broadcast_source(int broadcast, std::uint32_t ancestor);
  void publish_broadcast_range(int broadcast, int domain, std::uint32_t first, std::uint32_t count);

  // ---- Dispatch queues and reservation (engine_dispatch.cc) ----
  std::vector<std::uint32_t> take_live(int call, const std::vector<std::uint32_t>& grains,
                                       const std::vector<std::uint32_t>* generations);
  Invocation make_reservation(int call, std::vector<std::uint32_t> grains,
                              std::uint16_t retries_used, bool tail_used, std::int32_t lineage = -1,
                              std::vector<std::int32_t> holds = {});

  // ---- Commit of reports (engine_commit.cc) ----
  std::string check_report(const InFlight& in_flight, const Report& report) const;

  // ---- Recovery (engine_recovery.cc) ----
  void requeue(int call, const std::vector<std::uint32_t>& grains, std::uint16_t retries_used,
               bool tail_used, bool immediate);
  std::string describe_grains(int call, const std::vector<std::uint32_t>& grains) const;
  /// Applies the Call's RecoveryPolicy to the `live` Grains of the failed RPC `in_flight`.
  FailureVerdict recover(const InFlight& in_flight, const std::vector<std::uint32_t>& live,
                         const std::string& error);
  /// Removes and returns an in-flight RPC; counts a stale report when it is unknown.
  std::optional<InFlight> take_in_flight(std::uint64_t rpc_id);

  // ---- Re-materialisation of lost values (engine_rebuild.cc, engine_rebuild_plan.cc) ----
  enum class Avail : std::uint8_t { ok, pending, lost, failed };
  // Where an Item's value lives now: its own block and row unless it was re-materialised
  // (redirected). Inline: every input of every dispatched Grain asks, and without a loss
  // there is no redirect to follow.
  Binding bound(std::int32_t block, std::uint32_t row) const {
    if (rebuild_.redirects.empty()) return Binding{block_id(block), row};
    return bound_redirected(block, row);
  }
  Binding bound_redirected(std::int32_t block, std::uint32_t row) const;
  Avail availability(std::int32_t& block, std::uint32_t& row, std::int32_t& cause) const;
  Avail grain_inputs(int call, std::uint32_t entity, std::int32_t& cause);
  void record_lineage(const InFlight& in_flight, const Report& report);
  // Throws std::logic_error when a loss is reported without EngineOptions::record_lineage.
  void require_lineage(const std::string& reason) const;
  void mark_lost(std::int32_t block);
  bool item_needed(int port, std::uint32_t entity, std::int32_t block, std::uint32_t row) const;
  void demand(std::int32_t block, std::uint32_t row);
  void demand_lost(std::int32_t block, std::uint32_t row);  // resolves first; demands if lost
  void queue_reexecution(std::uint32_t rpc, std::uint32_t entity);
  std::vector<std::pair<std::int32_t, std::uint32_t>> rows_of(std::uint32_t rpc,
                                                              std::size_t index) const;
  void redirect(std::int32_t block, std::uint32_t row, std::int32_t to, std::uint32_t to_row);
  void unrebuildable(std::int32_t block, std::uint32_t row, std::int32_t cause);
  std::int32_t loss_cause(const std::string& why);
  void progress_rebuilds();
  /// Finishes again the roots that waited for lost outputs and can be delivered now; demands
  /// the lost outputs it finds. True when it demanded any.
  bool release_waiting_roots();
  /// Whether output `item`'s value can be delivered (ok), is being rebuilt, or cannot be
  /// (failed: `cause`); bindings of Items that are not PRESENT are ok.
  Avail output_availability(const Item& item, std::int32_t& cause) const;
  bool compose_again(const GroupStep& step);
  bool admit_parked(ParkedBatch& b);
  bool hold_back(int call, std::vector<std::uint32_t>& grains, std::uint16_t retries_used,
                 bool tail_used);
  void release_holds(std::vector<std::int32_t>& holds);
  void commit_rebuild(InFlight in_flight, const Report& report);
  // A re-execution that could not finish: with `retry`, its Grains run again within their
  // budget, which a loss is charged to unless it is a further report of one already charged
  // (`repeated` false: see inputs_lost).
  void rebuild_failed(InFlight in_flight, const std::string& why, bool retry, bool repeated = true);

  // ---- State ----
  // Construction (engine.cc).
  std::shared_ptr<const RuntimePlan> plan_;
  const RuntimePlan& p_;
  EngineOptions options_;
  std::size_t first_row_;
  std::size_t rows_;
  std::vector<std::size_t> call_inputs_;  // number of inputs per Call

  // Facts and lineage: Entities, per Domain; Items, per Port, indexed by Entity; pending
  // facts; interned causes.
  std::vector<std::vector<std::uint32_t>> parent_;
  std::vector<std::vector<std::uint32_t>> ordinal_;
  std::vector<std::vector<int>> child_domains_;
  std::vector<std::vector<Item>> items_;
  std::vector<Fact> facts_;
  std::size_t fact_head_ = 0;
  std::vector<Cause> causes_;

  // Value lifetime.
  std::vector<BlockState> blocks_;
  std::size_t live_blocks_ = 0;
  std::vector<StoreCommand> store_commands_;

  // Grains, per Call, indexed by Entity; GroupFailure barriers, per Call, indexed by the
  // barrier Domain's Entity (-1: none).
  std::vector<std::vector<Grain>> grains_;
  std::vector<std::vector<std::int32_t>> barriers_;
  std::vector<CallCounters> counters_;
  std::uint64_t grains_total_ = 0;
  std::uint64_t grains_sealed_ = 0;
  std::uint64_t values_released_ = 0;

  // Expand (rule_expand.cc; read by value lifetime, reduce and broadcast).
  ExpandState expand_;

  // Reduce (rule_reduce.cc; guards are counted down as Grains seal, engine_grains.cc).
  ReduceState reduce_;

  // Filter and broadcast keep no state of their own: arrivals are read from the Items.

  // Dispatch: queues per Call and the RPCs in flight.
  std::vector<CallQueues> queues_;
  std::unordered_map<std::uint64_t, InFlight> in_flight_;
  std::uint64_t next_rpc_id_ = 1;

  // Commit.
  std::uint64_t stale_reports_ = 0;

  // Re-materialisation: lineage of every block, redirects, work waiting for a rebuild.
  RebuildState rebuild_;

  // Completion (engine.cc): roots whose outputs are terminal or delivered.
  OutputsBelowRootState below_;
  std::vector<std::uint16_t> root_outputs_resolved_;
  std::vector<std::uint8_t> root_delivered_;
  std::vector<std::uint32_t> finished_roots_;
  std::size_t roots_finished_ = 0;
  std::string fatal_;
};

}  // namespace rayorch::detail
