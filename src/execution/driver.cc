// The one driver loop. See driver.h.
#include "execution/driver.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

#include "rayorch/errors.h"

#include "execution/crash_record.h"
#include "execution/run/run_options_check.h"
#include "program/plan_fingerprint.h"

namespace rayorch::detail {

Driver::Driver(std::shared_ptr<const RuntimePlan> plan, std::unique_ptr<WorkerPools> pools,
               DriverOptions options)
    : plan_(std::move(plan)), pools_(std::move(pools)), options_(options), created_(Clock::now()) {
  const std::vector<int> slots = pools_->sizes();
  const std::vector<int> actors = pools_->actors();
  const bool background = pools_->starts_in_background();
  const bool resizable = pools_->resizable();
  for (std::size_t p = 0; p < actors.size(); ++p) {
    // A self-sizing pool's actors wait for the driver to start them (init_sizing()).
    const bool sizes = resizable && sizes_itself(plan_->pools[p].options);
    pool_states_.emplace_back(PoolState::Options{.name = plan_->pools[p].name,
                                                 .actors = actors[p],
                                                 .slots = slots[p],
                                                 .initial = sizes        ? ActorPhase::stopped
                                                            : background ? ActorPhase::starting
                                                                         : ActorPhase::ready,
                                                 .sizes_itself = sizes,
                                                 .created = created_});
    slots_.emplace_back(static_cast<std::size_t>(slots[p]));
  }
  max_outstanding_ = std::max<std::size_t>(pools_->max_outstanding(), 1);
  for (std::size_t p = 0; p < actors.size(); ++p)
    places_by_inputs_.push_back(pools_->places_by_inputs(static_cast<int>(p)) ? 1 : 0);
  restarted_.assign(actors.size(), 0);
  std::vector<bool> reads_sources(plan_->pools.size(), false);
  for (const PlanCall& c : plan_->calls) {
    for (int port : c.inputs) {
      if (std::find(plan_->sources.begin(), plan_->sources.end(), port) != plan_->sources.end())
        reads_sources[static_cast<std::size_t>(c.pool)] = true;
    }
  }
  for (std::size_t p = 0; p < reads_sources.size(); ++p) {
    if (reads_sources[p]) source_pools_.push_back(static_cast<int>(p));
  }
  // No Call reads a source directly (every source goes through a structural operator
  // first): any ready actor lets admission start.
  if (source_pools_.empty()) {
    for (std::size_t p = 0; p < reads_sources.size(); ++p)
      source_pools_.push_back(static_cast<int>(p));
  }
  init_sizing();
}

Driver::~Driver() {
  close();
}

void Driver::close() {
  if (closed_) return;
  closed_ = true;
  pools_->stop();
}

RunMetrics Driver::run(SourceData sources, const RunOptions& options, const RootCallback& sink) {
  if (closed_) {
    throw ExecutionError(
        "this executor is closed (after close() or a run whose actors broke); create a new "
        "executor to run again");
  }
  // Bad options throw here, before anything ran, and leave the executor usable.
  check_run_options(options);
  const bool below_root = std::any_of(plan_->outputs.begin(), plan_->outputs.end(),
                                      [&](int port) { return plan_->ports[port].domain != 0; });
  if (below_root && (!options.journal.path.empty() || !options.dead_letters.empty())) {
    throw std::invalid_argument(
        "a journal or a dead-letter file records one value per output and root, but an output "
        "of this pipeline is a Port below the root; gather it with F.reduce to journal the run");
  }
  RunState state(plan_, pools_->make_store(plan_), std::move(sources), options, sink,
                 pools_->actors(), options_.wire);
  if (options_.keep_rpc_log) state.keep_rpc_log(log_);
  ++run_;
  crash_labels_.assign(slots_.size(), 0);
  for (std::size_t p = 0; p < slots_.size(); ++p)
    crash_labels_[p] = options.crash_record && pools_->in_driver_process(static_cast<int>(p));
  if (std::find(crash_labels_.begin(), crash_labels_.end(), 1) != crash_labels_.end())
    install_crash_record();
  // A run that aborts (a UDF error under the abort policy, a contract error, the error
  // budget, an exception from the streaming callback) leaves the actors as they are: the
  // executor stays usable once the attempts in flight finished. Only broken actors
  // (handle() closed the executor already) or a drain that cannot replace one close it.
  auto keep_actors = [this] {
    if (closed_) return;
    try {
      drain();
    } catch (...) {
      // drain() closed the executor; the run's own error is the one to report.
    }
  };
  try {
    return drive(state);
  } catch (const RunInterrupted&) {
    state.write_aborted("interrupted");
    drain();
    throw;
  } catch (const std::exception& e) {
    state.write_aborted(e.what());
    keep_actors();
    throw;
  } catch (...) {
    // The Python bindings unwind a failed row callback with an exception of their own.
    keep_actors();
    throw;
  }
}

RunMetrics Driver::drive(RunState& state) {
  // Late reports of attempts abandoned in earlier runs are rejected here, so each one is
  // counted even when this run never waits for a result.
  results_.clear();
  pools_->wait(Clock::now(), results_);
  results_.insert(results_.end(), std::make_move_iterator(late_results_.begin()),
                  std::make_move_iterator(late_results_.end()));
  late_results_.clear();
  for (WorkerResult& r : results_) handle(state, r);

  std::vector<PoolMetrics> starts;
  starts.reserve(pool_states_.size());
  for (const PoolState& pool : pool_states_) starts.push_back(pool.starts());
  state.set_actor_starts(std::move(starts));
  state.begin();
  // Starts that await_actors() learnt between runs are in the metrics already; the
  // observers hear of them now.
  for (const FreshStart& f : unannounced_) state.announce_actor_start(f.pool, f.start, f.at);
  unannounced_.clear();
  take_actor_events(state);
  if (sizing_) begin_sizing(state);
  await_source_actor(state);
  state.admit();
  state.settle();
  int idle_rounds = 0;
  while (!state.done()) {
    dispatch(state);
    if (outstanding_ == 0 && !waiting_for_actors()) {
      // Nothing was sent, but a pick may have sealed barriered Grains: settling publishes
      // their facts (and may retire and admit input batches). A stuck engine throws there
      // with its progress counters; this is the backstop.
      state.settle();
      // Work may wait for a self-sizing pool that has no actor: the policy starts one now,
      // and the loop waits for it.
      if (sizing_ && !state.done()) {
        resize(state, true);
        if (waiting_for_actors()) {
          idle_rounds = 0;
          continue;
        }
      }
      if (++idle_rounds > 2 && !state.done()) {
        throw ExecutionError(
            "deadlock: input batches are incomplete but no Grain is dispatchable and nothing "
            "is in flight");
      }
      continue;
    }
    idle_rounds = 0;
    results_.clear();
    const auto wake = std::min({next_deadline(), state.next_hold_deadline(),
                                Clock::now() + std::chrono::milliseconds(200)});
    pools_->wait(wake, results_);
    for (WorkerResult& r : results_) handle(state, r);
    take_actor_events(state);
    expire(state);
    state.settle();
    if (sizing_) resize(state, false);
    state.tick();
  }
  take_actor_events(state);  // a node loss detected with the last results belongs to this run
  return state.finish();
}

void Driver::drain() {
  // After an interrupt or an aborted run: every worker finishes (or times out of) the RPC it runs,
  // so the next run finds them all idle; the results belong to the abandoned run and are dropped.
  // The interrupt may have come while results_ was being handled: those not handled yet still hold
  // their worker. Replacing a worker throws ExecutionError when none can be started; then the
  // executor closes as after any unrecoverable failure.
  auto release = [this](const WorkerResult& r) {
    if (r.run != run_ || !r.current) return;
    Slot& w = slots_[r.pool][r.slot];
    if (!w.current) return;  // handled before the interrupt
    take_rpc(w);
    if (r.actor_restarting) {
      apply({.kind = ActorEvent::Kind::restarting,
             .pool = r.pool,
             .actor = pools_->actor_of(r.pool, r.slot),
             .at = Clock::now(),
             .error = {}});
    }
  };
  try {
    for (const WorkerResult& r : results_) release(r);
    while (outstanding_ > 0) {
      results_.clear();
      pools_->wait(std::min(next_deadline(), Clock::now() + std::chrono::milliseconds(200)),
                   results_);
      for (const WorkerResult& r : results_) release(r);
      // Starts are kept for the next run (wait() would otherwise wake for them at once).
      pools_->take_actor_events(drained_events_);
      const auto now = Clock::now();
      for (std::size_t p = 0; p < slots_.size(); ++p) {
        for (std::size_t slot = 0; slot < slots_[p].size(); ++slot) {
          Slot& w = slots_[p][slot];
          if (!w.current || w.deadline > now) continue;
          pools_->replace(static_cast<int>(p), static_cast<int>(slot));
          take_rpc(w);
        }
      }
    }
  } catch (...) {
    close();
    throw;
  }
}

void Driver::dispatch(RunState& state) {
  const std::size_t np = slots_.size();
  for (std::size_t k = 0; k < np; ++k) {
    const std::size_t p = (cursor_ + k) % np;
    for (std::size_t slot = 0; slot < slots_[p].size(); ++slot) {
      if (outstanding_ >= max_outstanding_) return;
      if (slots_[p][slot].current || !takes_tasks(p, slot)) continue;
      if (sizing_ && retire_surplus(p, slot)) continue;
      // Holding a small batch back is safe only while another RPC runs: its result wakes
      // the loop, so nothing can stall.
      auto rpc = state.pick(static_cast<int>(p), outstanding_ > 0, tail_cap(state, p, slot));
      if (!rpc) break;
      WorkerTask task;
      task.inputs = state.resolve_inputs(*rpc);
      // An idle slot of the actor that keeps the call's inputs takes it in place of this one,
      // which stays idle for the next pick (co-location, DESIGN 5.12).
      std::size_t target = slot;
      if (places_by_inputs_[p]) target = local_slot(p, slot, task.inputs);
      if (target != slot) --slot;  // wraps for slot 0; the loop's ++slot gives it back
      Slot& w = slots_[p][target];
      w.dispatched = Clock::now();
      const auto timeout = plan_->pools[p].options.timeout;
      w.deadline = timeout.count() > 0 ? Clock::now() + timeout : Clock::time_point::max();
      task.run = run_;
      task.pool = static_cast<int>(p);
      task.slot = static_cast<int>(target);
      task.invocation = *rpc;
      if (crash_labels_[p] != 0) task.crash_label = state.crash_label(*rpc);
      w.current = std::move(*rpc);
      pools_->submit(std::move(task));
      ++outstanding_;
      cursor_ = p + 1;
    }
  }
}

std::size_t Driver::local_slot(std::size_t pool, std::size_t slot,
                               const ResolvedInputs& inputs) const {
  const int holder = pools_->holder_of(static_cast<int>(pool), inputs);
  if (holder < 0) return slot;
  for (std::size_t s = 0; s < slots_[pool].size(); ++s) {
    if (pools_->actor_of(static_cast<int>(pool), static_cast<int>(s)) != holder) continue;
    if (!slots_[pool][s].current && takes_tasks(pool, s)) return s;
  }
  return slot;
}

void Driver::handle(RunState& state, WorkerResult& r) {
  if (r.run != run_) {
    // An attempt abandoned in an earlier run: its engine is gone, nothing can accept it.
    state.count_stale_report();
    return;
  }
  if (!r.current) {
    // The late report of an abandoned attempt: the generation fence rejects it.
    state.reject_late(r.attempt.report);
    return;
  }
  Invocation rpc = take_rpc(slots_[r.pool][r.slot]);
  if (!r.fatal.empty()) {
    // The worker has no UDF instance (its replacement could not be built): the executor
    // cannot run again.
    close();
    throw ExecutionError(r.fatal);
  }
  Attempt& a = r.attempt;
  const int actor = pools_->actor_of(r.pool, r.slot);
  // A lost attempt's replacement is counted with its loss (apply_attempt), not as a restart.
  for (const auto& [flag, kind] : {std::pair{r.actor_held, ActorEvent::Kind::held},
                                   std::pair{r.actor_restarting, ActorEvent::Kind::restarting}}) {
    if (flag)
      apply({.kind = kind, .pool = r.pool, .actor = actor, .at = Clock::now(), .error = {}});
  }
  if (a.kind == Attempt::Kind::ok) {
    pool_states_[static_cast<std::size_t>(r.pool)].record_call(
        rpc.grains.size(), std::chrono::duration<double>(a.end - a.start).count());
  }
  state.apply_attempt(rpc, a, actor, r.loss_counted);
}

Invocation Driver::take_rpc(Slot& slot) {
  Invocation rpc = std::move(*slot.current);
  slot.current.reset();
  slot.deadline = Clock::time_point::max();
  --outstanding_;
  return rpc;
}

void Driver::expire(RunState& state) {
  const auto now = Clock::now();
  for (std::size_t p = 0; p < slots_.size(); ++p) {
    for (std::size_t slot = 0; slot < slots_[p].size(); ++slot) {
      Slot& w = slots_[p][slot];
      if (!w.current || w.deadline > now) continue;
      Invocation rpc = take_rpc(w);
      pools_->replace(static_cast<int>(p), static_cast<int>(slot));
      state.apply_timeout(rpc, pools_->actor_of(static_cast<int>(p), static_cast<int>(slot)), now);
    }
  }
}

Driver::Clock::time_point Driver::next_deadline() const {
  auto t = Clock::time_point::max();
  for (const auto& pool : slots_) {
    for (const Slot& w : pool) {
      if (w.current) t = std::min(t, w.deadline);
    }
  }
  return t;
}

std::uint64_t Driver::plan_fingerprint() const {
  return detail::plan_fingerprint(*plan_);
}

}  // namespace rayorch::detail
