// Driver-side run state. See run_state.h.
#include "execution/run_state.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "rayorch/errors.h"

#include "runtime/protocol_codec.h"

namespace rayorch::detail {

RunState::RunState(std::shared_ptr<const RuntimePlan> plan, std::unique_ptr<BlockStore> store,
                   SourceData sources, const RunOptions& options, const RootCallback& sink,
                   std::vector<int> actors_per_pool, bool wire)
    : plan_(std::move(plan)),
      store_(std::move(store)),
      wire_(wire),
      actors_per_pool_(std::move(actors_per_pool)),
      recorder_(*plan_, sources, actors_per_pool_),
      events_(options),
      batches_(plan_, std::move(sources), options, store_->can_lose_values()),
      scheduler_(plan_, options),
      delivery_(options, sink) {}

void RunState::begin() {
  const SourceData& sources = batches_.sources();
  if (!events_.empty()) {
    std::vector<std::string> calls;
    for (const PlanCall& c : plan_->calls) calls.push_back(c.name);
    std::vector<std::string> pools;
    for (const PlanPool& p : plan_->pools) pools.push_back(p.name);
    std::vector<int> call_pools;
    std::vector<int> call_batch_sizes;
    for (const PlanCall& c : plan_->calls) {
      call_pools.push_back(c.pool);
      call_batch_sizes.push_back(c.batch_size);
    }
    events_.run_start(RunStartEvent{.rows = batches_.rows(),
                                    .input_batches = batches_.count(),
                                    .rows_known = batches_.rows_known(),
                                    .calls = calls,
                                    .pools = pools,
                                    .actors_per_pool = actors_per_pool_,
                                    .call_pools = call_pools,
                                    .call_batch_sizes = call_batch_sizes,
                                    .restored = sources.restored.size()});
  }
  // Restored roots reach the caller and the observers like computed ones (delivery first,
  // then on_root), before any computed root.
  for (const auto& [row, outcome] : sources.restored) deliver_restored(row, outcome);
}

void RunState::deliver_restored(std::size_t row, Outcome outcome) {
  const SourceData& sources = batches_.sources();
  if (sources.deliver_restored) sources.deliver_restored(restored_);
  ++restored_;
  if (events_.empty()) return;
  events_.root(RootEvent{
      .row = row, .outcome = outcome, .seconds = recorder_.now_seconds(), .restored = true});
}

void RunState::admit() {
  if (delivery_.budget().exceeded()) return;  // the budget is spent: admit nothing more
  batches_.admit(*store_, recorder_);
  // A lazy source's restored roots reach the caller as they are pulled, before any root of
  // the batch they were pulled for.
  for (const auto& [row, outcome] : batches_.take_restored()) {
    recorder_.root_restored(outcome);
    deliver_restored(row, outcome);
  }
}

std::optional<Invocation> RunState::pick(int pool, bool may_wait, std::size_t max_ready) {
  if (delivery_.budget().exceeded()) return std::nullopt;  // the budget is spent: stop
  auto rpc = scheduler_.pick(pool, may_wait, batches_.active(), max_ready);
  if (rpc) recorder_.dispatched(rpc->call, rpc->grains.size());
  return rpc;
}

std::chrono::steady_clock::time_point RunState::next_hold_deadline() const {
  return scheduler_.next_hold_deadline();
}

ResolvedInputs RunState::resolve_inputs(const Invocation& rpc) const {
  return store_->resolve_inputs(rpc);
}

CrashLabel RunState::crash_label(const Invocation& rpc) const {
  const PlanCall& call = plan_->calls[rpc.call];
  const Engine& engine = engine_of(rpc);
  CrashLabel label;
  label.call = call.name.c_str();
  label.module = plan_->pools[call.pool].udf.c_str();
  label.input_batch = rpc.input_batch;
  label.grains = static_cast<std::uint32_t>(rpc.grains.size());
  for (std::size_t i = 0; i < std::min(rpc.grains.size(), CrashLabel::kKeys); ++i) {
    CrashLabel::Key& key = label.keys[i];
    std::size_t depth = 0;
    key.root = engine.entity_path(call.domain, rpc.grains[i], key.ordinals, depth);
    key.depth = static_cast<std::uint32_t>(depth);
  }
  return label;
}

Engine& RunState::engine_of(const Invocation& rpc) const {
  Engine* e = batches_.find(rpc.input_batch);
  // An input batch retires only when complete, which no RPC in flight lets it be.
  if (e == nullptr) {
    throw std::logic_error(
        fmt::format("internal error: an RPC of input batch {} is in flight "
                    "but the batch is not active",
                    rpc.input_batch));
  }
  return *e;
}

void RunState::apply_store_commands(Engine& e) {
  // Source columns a re-materialisation reads go back into the store first (DESIGN 5.13).
  for (const auto& [column, block] : e.take_source_restores())
    batches_.restore_source(*store_, e.batch_index(), column, block);
  std::vector<StoreCommand> commands = e.take_store_commands();
  if (wire_) {
    for (StoreCommand& c : commands) c = decode_store_command(encode(c));
  }
  store_->apply(commands);
}

void RunState::retire(std::size_t slot) {
  Engine& e = *batches_.active()[slot];
  recorder_.fold(e);
  apply_store_commands(e);
  store_->release_batch(e.batch_index());
  batches_.retire(slot);
}

void RunState::settle() {
  for (;;) {
    bool retired = false;
    for (std::size_t i = 0; i < batches_.active().size(); ++i) {
      Engine& e = *batches_.active()[i];
      e.advance();
      if (!e.fatal_error().empty()) throw ExecutionError(e.fatal_error());
      apply_store_commands(e);  // groups first: outputs may be groups
      delivery_.deliver(e, *store_, batches_, recorder_, events_);
      apply_store_commands(e);
      if (e.complete()) {
        retire(i);
        retired = true;
        break;
      }
      if (e.stuck()) throw ExecutionError(e.deadlock_report());
    }
    if (!retired) break;
    admit();
  }
  // The first check past the budget ends the run, whatever the input batch size; the
  // driver abandons the Grains in flight (their results are dropped).
  if (delivery_.budget().exceeded()) throw ExecutionError(delivery_.budget().error());
}

bool RunState::done() const {
  return batches_.done();
}

RunState::PoolBacklog RunState::backlog(int pool) const {
  PoolBacklog b;
  b.more_can_arrive = !batches_.all_admitted();
  for (int call : plan_->pools[static_cast<std::size_t>(pool)].calls) {
    for (const auto& e : batches_.active()) {
      const auto& k = e->counters(call);
      b.ready += e->ready_count(call);
      b.unsealed += k.total - k.sealed;
      if (!b.more_can_arrive) b.more_can_arrive = e->upstream_unsealed(call);
    }
  }
  return b;
}

void RunState::record_rpc(const Invocation& rpc, Engine& engine, int actor,
                          std::chrono::steady_clock::time_point start,
                          std::chrono::steady_clock::time_point end, const char* status) {
  const std::size_t grains = rpc.grains.size();
  const double seconds = std::chrono::duration<double>(end - start).count();
  if (engine.rebuilding(rpc.id)) recorder_.rebuild_ended(seconds);
  if (rpc_log_ != nullptr)
    rpc_log_->push_back(rpc_record(rpc, engine, std::string_view(status) != "ok"));
  recorder_.rpc_ended(rpc.call, grains, engine.batch_index(), seconds, status);
  if (events_.empty()) return;
  RpcEvent e;
  e.call = rpc.call;
  e.pool = plan_->calls[rpc.call].pool;
  e.actor = actor;
  e.input_batch = engine.batch_index();
  e.rows = grains;
  if (events_.wants_rpc_parents()) {
    std::set<std::string> parents;
    const int domain = plan_->calls[rpc.call].domain;
    for (std::uint32_t g : rpc.grains) {
      std::string key = engine.entity_key(domain, g);
      const auto slash = key.rfind('/');
      parents.insert(slash == std::string::npos ? key : key.substr(0, slash));
    }
    e.parents = parents.size();
  }
  if (events_.wants_rpc_roots()) {
    rpc_roots_.clear();
    const int domain = plan_->calls[rpc.call].domain;
    for (std::uint32_t g : rpc.grains) {
      rpc_roots_.push_back(batches_.caller_row(engine.first_row() + engine.root_entity(domain, g)));
    }
    std::sort(rpc_roots_.begin(), rpc_roots_.end());
    rpc_roots_.erase(std::unique(rpc_roots_.begin(), rpc_roots_.end()), rpc_roots_.end());
    e.roots = rpc_roots_;
  }
  e.start_seconds = recorder_.seconds_at(start);
  e.end_seconds = recorder_.seconds_at(end);
  e.status = status;
  events_.rpc(e);
}

void RunState::node_lost(const NodeLoss& loss) {
  recorder_.node_lost(
      NodeLossMetrics{.node = loss.node,
                      .address = loss.address,
                      .detected_seconds = std::max(0.0, recorder_.seconds_at(loss.at)),
                      .cause = loss.cause});
}

void RunState::actor_started(int pool, const ActorStartMetrics& start,
                             std::chrono::steady_clock::time_point at) {
  recorder_.actor_started(pool, start);
  announce_actor_start(pool, start, at);
}

void RunState::pool_resized(int pool, int from, int to, const std::string& reason,
                            std::chrono::steady_clock::time_point at) {
  const double seconds = std::max(0.0, recorder_.seconds_at(at));
  recorder_.pool_resized(
      pool, PoolResizeMetrics{.seconds = seconds, .from = from, .to = to, .reason = reason});
  if (events_.empty()) return;
  events_.pool_resize(PoolResizeEvent{
      .pool = pool, .from = from, .to = to, .run_seconds = seconds, .reason = reason});
}

void RunState::announce_actor_start(int pool, const ActorStartMetrics& start,
                                    std::chrono::steady_clock::time_point at) {
  if (events_.empty()) return;
  events_.actor_start(ActorStartEvent{.pool = pool,
                                      .actor = start.actor,
                                      .seconds = start.started_seconds,
                                      .run_seconds = recorder_.seconds_at(at),
                                      .error = start.error});
}

void RunState::apply_attempt(const Invocation& rpc, Attempt& attempt, int actor,
                             bool replacement_counted) {
  Engine& engine = engine_of(rpc);
  FailureVerdict verdict;
  switch (attempt.kind) {
    case Attempt::Kind::ok: {
      record_rpc(rpc, engine, actor, attempt.start, attempt.end, "ok");
      std::vector<BlockId> created;
      created.reserve(attempt.blocks.size());
      for (auto& [id, block] : attempt.blocks) {
        store_->put(id, std::move(block));
        created.push_back(id);
      }
      const CommitStatus st = engine.commit(attempt.report, created);
      if (st == CommitStatus::contract_error) {
        const PlanCall& pc = plan_->calls[rpc.call];
        throw ExecutionError(fmt::format(
            "contract error: Call {} (UDF {}) returned a result that breaks the UDF contract "
            "for an RPC of {} rows: {}; run() must return one element per input row for every "
            "output",
            pc.name, pc.udf, rpc.grains.size(), attempt.report.contract_error));
      }
      if (st == CommitStatus::accepted) recorder_.accepted(rpc.call, rpc.grains.size());
      return;
    }
    case Attempt::Kind::failed:
      record_rpc(rpc, engine, actor, attempt.start, attempt.end, "failed");
      verdict = engine.fail(rpc.id, attempt.error);
      break;
    case Attempt::Kind::lost:
      record_rpc(rpc, engine, actor, attempt.start, attempt.end, "lost");
      if (!replacement_counted) recorder_.actor_replaced(plan_->calls[rpc.call].pool);
      verdict = engine.lost(rpc.id, attempt.error, Loss::actor);
      break;
    case Attempt::Kind::inputs_lost:
      record_rpc(rpc, engine, actor, attempt.start, attempt.end, "inputs lost");
      engine.inputs_lost(rpc.id, attempt.lost_blocks, attempt.error);
      return;
  }
  if (verdict.abort) throw ExecutionError(verdict.message);
}

void RunState::apply_timeout(const Invocation& rpc, int actor,
                             std::chrono::steady_clock::time_point now) {
  Engine& engine = engine_of(rpc);
  const int pool = plan_->calls[rpc.call].pool;
  const auto timeout = plan_->pools[pool].options.timeout;
  recorder_.actor_replaced(pool);
  record_rpc(rpc, engine, actor, now - timeout, now, "timeout");
  const FailureVerdict verdict = engine.lost(
      rpc.id, fmt::format("rayorch::Timeout: the RPC ran past the {} ms timeout", timeout.count()),
      Loss::timeout);
  if (verdict.abort) throw ExecutionError(verdict.message);
}

RpcRecord RunState::rpc_record(const Invocation& rpc, const Engine& engine, bool failed) const {
  const PlanCall& call = plan_->calls[rpc.call];
  RpcRecord rec;
  rec.call = call.name;
  rec.input_batch = engine.batch_index();
  for (std::size_t i = 0; i < rpc.grains.size(); ++i) {
    rec.grains.push_back(engine.entity_key(call.domain, rpc.grains[i]));
    rec.generations.push_back(rpc.generations[i]);
  }
  rec.failed = failed;
  return rec;
}

void RunState::reject_late(Report& report) {
  // The attempt was abandoned: its blocks were never stored, so there is nothing to free.
  Engine* e = batches_.find(report.input_batch);
  if (e == nullptr) {
    recorder_.stale_report();  // its input batch is already complete
    return;
  }
  if (e->commit(report, {}) != CommitStatus::stale) {
    throw ExecutionError("internal error: the late report of an abandoned attempt was accepted");
  }
}

void RunState::tick() {
  if (events_.progress_due()) emit_progress(false);
}

void RunState::emit_progress(bool final) {
  const std::vector<PoolMetrics>& pools = recorder_.metrics().pools;
  pool_progress_.resize(pools.size());
  for (std::size_t p = 0; p < pools.size(); ++p) {
    PoolProgress& pp = pool_progress_[p];
    pp = PoolProgress{.pool = pools[p].pool, .actors = pools[p].actors, .ready = 0, .failed = 0};
    for (const ActorStartMetrics& s : pools[p].started) ++(s.error.empty() ? pp.ready : pp.failed);
    // A self-sizing pool shows its target; its starts count actors retired since.
    if (!pools[p].actors_over_time.empty()) {
      pp.actors = pools[p].actors_over_time.back().second;
      pp.ready = std::min(pp.ready, pp.actors);
    }
  }
  const double elapsed = recorder_.now_seconds();
  progress_.resize(plan_->calls.size());
  for (std::size_t c = 0; c < plan_->calls.size(); ++c) {
    const int call = static_cast<int>(c);
    const auto pool = static_cast<std::size_t>(plan_->calls[c].pool);
    const int actors = pool < pool_progress_.size() ? pool_progress_[pool].actors : 0;
    const double busy = recorder_.metrics().calls[c].busy_seconds;
    progress_[c] = CallProgress{.call = plan_->calls[c].name,
                                .done = recorder_.done(call),
                                .ready = ready_grains(batches_.active(), call),
                                .in_flight = recorder_.in_flight(call),
                                .busy_share = actors > 0 && elapsed > 0
                                                  ? busy / (static_cast<double>(actors) * elapsed)
                                                  : 0.0};
  }
  events_.progress(ProgressEvent{.roots_done = delivery_.delivered() + restored_,
                                 .roots_total = batches_.rows() + restored_,
                                 .roots_restored = restored_,
                                 .total_known = batches_.rows_known(),
                                 .elapsed_seconds = elapsed,
                                 .calls = progress_,
                                 .pools = pool_progress_,
                                 .final = final});
}

RunMetrics RunState::finish() {
  for (const auto& e : batches_.active()) recorder_.fold(*e);
  recorder_.close(true);
  emit_progress(true);
  events_.end(recorder_, false, {}, delivery_.delivered());
  return recorder_.take();
}

void RunState::write_aborted(const std::string& error) noexcept {
  try {
    recorder_.close(false);
    try {
      emit_progress(true);
    } catch (...) {
      // The run is failing already; the report below matters more.
    }
    events_.end(recorder_, true, error, delivery_.delivered());
  } catch (...) {
    // Nothing more can be done while the run is already failing.
  }
}

}  // namespace rayorch::detail
