// The Ray backend's worker pools, on the driver. See ray_pools.h.
#include "ray_pools.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ray_block_locality.h"
#include "ray_blocks.h"
#include "ray_store.h"
#include "ray_wire.h"
#include <fmt/format.h>

#include "rayorch/errors.h"
#include "rayorch/module_options.h"

#include "execution/actor_block_cache.h"
#include "runtime/protocol_codec.h"

namespace nb = nanobind;

namespace rayorch::python {
namespace {

using Clock = std::chrono::steady_clock;
using rd::ActorBlockCache;

class RayPools final : public rd::WorkerPools {
 public:
  RayPools(std::shared_ptr<const rd::RuntimePlan> plan, nb::object backend)
      : plan_(std::move(plan)), backend_(std::move(backend)) {
    actors_ = backend_.actors_per_pool();
    const std::vector<int> tasks_in_flight = backend_.max_tasks_in_flight_per_actor();
    if (actors_.size() != plan_->pools.size() || tasks_in_flight.size() != actors_.size()) {
      throw ExecutionError(fmt::format("the Ray backend started {} pools for a plan with {}",
                                       actors_.size(), plan_->pools.size()));
    }
    for (std::size_t p = 0; p < actors_.size(); ++p) {
      const bool auto_pool = sizes_itself(plan_->pools[p].options);
      if (auto_pool && tasks_in_flight[p] > 1) {
        throw ExecutionError(fmt::format(
            "the Ray backend gives the self-sizing pool {} {} calls in flight per actor; it "
            "takes one",
            plan_->pools[p].name, tasks_in_flight[p]));
      }
      const int slots = actors_[p] * std::max(tasks_in_flight[p], 1);
      slots_.push_back(slots);
      epochs_.emplace_back(static_cast<std::size_t>(slots), 0);
      actor_epochs_.emplace_back(static_cast<std::size_t>(actors_[p]), 0);
      total_ += static_cast<std::size_t>(slots);
    }
    cache_ = std::make_shared<ActorBlockCache>(actors_);
    kept_outputs_ = kept_outputs(*plan_);
    start_timeout_ = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(backend_.startup_timeout_s()));
  }
  RayPools(const RayPools&) = delete;
  RayPools& operator=(const RayPools&) = delete;
  ~RayPools() override {
    stop();
    if (!python_alive()) return;  // the pending calls' ObjectRefs leak with the interpreter
    Gil gil;
    pending_.clear();
  }

  std::unique_ptr<rd::BlockStore> make_store(std::shared_ptr<const rd::RuntimePlan>) override {
    return make_ray_store(backend_, cache_);
  }
  std::vector<int> sizes() const override { return slots_; }
  bool places_by_inputs(int pool) const override { return plan_->pools[pool].members > 1; }
  int holder_of(int pool, const rd::ResolvedInputs& inputs) const override {
    // The actor holding most of the call's input blocks (the first of them on a tie).
    std::vector<int> held(static_cast<std::size_t>(actors_[pool]), 0);
    int best = -1;
    for (const rd::BlockRef& b : inputs.keep_alive) {
      const int actor = cache_->holder(pool, remote(b).id());
      if (actor < 0) continue;
      ++held[static_cast<std::size_t>(actor)];
      if (best < 0 || held[static_cast<std::size_t>(actor)] > held[static_cast<std::size_t>(best)])
        best = actor;
    }
    return best;
  }
  std::vector<int> actors() const override { return actors_; }
  // Task slot k of actor a is worker k * actors + a: the driver, which takes idle workers in
  // order, gives every actor a task before it queues a second one at any.
  int actor_of(int pool, int slot) const override { return slot % actors_[pool]; }
  std::size_t max_outstanding() const override { return total_; }
  bool starts_in_background() const override { return true; }
  bool resizable() const override { return true; }

  void start_actor(int pool, int actor) override {
    on_backend("starting", pool, [&] { backend_.start(pool, actor); });
  }

  void retire_actor(int pool, int actor) override {
    // The actor is idle (the driver's rule): no call of it is pending or held.
    ++actor_epochs_[pool][actor];
    cache_->reset(pool, actor);
    on_backend("retiring", pool, [&] { backend_.retire(pool, actor); });
  }

  void take_actor_events(std::vector<rd::ActorEvent>& out) override {
    using Kind = rd::ActorEvent::Kind;
    const auto at = Clock::now();
    if (!stopped_) {
      Gil gil;  // for the Python error, if any
      std::vector<std::pair<int, int>> lost;
      try {
        // Actors whose held calls Ray ended (the backend keeps those calls: it waits on them).
        for (const auto& [pool, actor] : backend_.take_resumed())
          out.push_back(
              {.kind = Kind::resumed, .pool = pool, .actor = actor, .at = at, .error = {}});
        lost = backend_.restart_idle_lost();
      } catch (const nb::python_error& e) {
        throw ExecutionError(
            fmt::format("restarting Ray actors lost with their node failed: {}", e.what()));
      }
      for (const auto& [pool, actor] : lost) {
        forget_actor(pool, actor);
        out.push_back(
            {.kind = Kind::restarting, .pool = pool, .actor = actor, .at = at, .error = {}});
      }
      for (auto& [pool, actor, error] : backend_.take_started()) {
        const Kind kind = error.empty() ? Kind::ready : Kind::failed;
        out.push_back(
            {.kind = kind, .pool = pool, .actor = actor, .at = at, .error = std::move(error)});
      }
    }
  }

  std::optional<Clock::duration> start_timeout() const override { return start_timeout_; }

  std::string abandon_starts(int pool, const std::vector<int>& actors) override {
    std::string why;
    on_backend("giving up the starts of", pool,
               [&] { why = backend_.abandon_starts(pool, actors); });
    return why;
  }

  void take_node_losses(std::vector<rd::NodeLoss>& out) override {
    if (stopped_ || !python_alive()) return;
    Gil gil;  // for the Python error, if any
    for (auto& [node, address, seconds, cause] : backend_.take_node_losses()) {
      out.push_back(rd::NodeLoss{.node = std::move(node),
                                 .address = std::move(address),
                                 .at = from_wall_seconds(seconds),
                                 .cause = std::move(cause)});
    }
  }

  void submit(rd::WorkerTask task) override {
    Pending p;
    p.run = task.run;
    p.pool = task.pool;
    p.slot = task.slot;
    p.actor = actor_of(task.pool, task.slot);
    p.epoch = epochs_[task.pool][task.slot];
    p.actor_epoch = actor_epochs_[task.pool][p.actor];
    p.submitted = Clock::now();
    // The blocks the actor holds already go by id; the others travel as ObjectRefs. A block
    // kept by another actor of the pool is exported by it first; one kept by an actor since
    // lost is lost (the engine rebuilds it from lineage: DESIGN 5.12, 5.13).
    RayTask wire;
    std::vector<const RemoteBlock*> fresh;
    std::vector<rd::BlockId> lost;
    for (const rd::BlockRef& b : task.inputs.keep_alive) {
      const RemoteBlock& block = remote(b);
      if (cache_->holds(task.pool, p.actor, block.id())) {
        wire.held.push_back(block.id());
        continue;
      }
      if (block.kept() &&
          !export_kept(backend_, *cache_, task.pool, plan_->pools[task.pool].name, block)) {
        lost.push_back(block.id());
        continue;
      }
      fresh.push_back(&block);
      wire.sent.push_back(block.id());
      p.sent.push_back(b);
    }
    if (!lost.empty()) {
      lost_now_.push_back(
          lost_inputs_result(task, plan_->pools[task.pool].name, p.submitted, std::move(lost)));
      return;
    }
    p.evicted = cache_->take_evictions(task.pool, p.actor);
    p.sends = cache_->sending(wire.sent);
    std::size_t output_blocks = 0;
    const std::vector<char>& keeps = kept_outputs_[task.invocation.call];
    for (std::size_t k = 0; k < task.invocation.outputs.size(); ++k) {
      const rd::OutputSlot& s = task.invocation.outputs[k];
      output_blocks += s.child_block != 0 ? 2 : 1;
      if (keeps[k] != 0) wire.kept.push_back(s.block);
    }
    p.kept = wire.kept;
    wire.invocation = std::move(task.invocation);
    wire.evicted = p.evicted;
    wire.groups = std::move(task.inputs.groups);
    const std::string bytes = encode_task(wire);
    const std::uint64_t token = ++tokens_;
    {
      Gil gil;
      nb::object refs = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(fresh.size())));
      if (!refs.is_valid()) throw_foreign();
      for (std::size_t i = 0; i < fresh.size(); ++i)
        PyTuple_SET_ITEM(refs.ptr(), static_cast<Py_ssize_t>(i), Py_NewRef(fresh[i]->ref()));
      p.blocks = backend_.submit(task.pool, p.actor, token, output_blocks, bytes,
                                 nb::borrow<nb::tuple>(refs));
    }
    p.invocation = std::move(wire.invocation);
    pending_.emplace(token, std::move(p));
  }

  void wait(Clock::time_point deadline, std::vector<rd::WorkerResult>& out) override {
    // Nothing in flight or held: the backend still waits for starts (its own wait returns at
    // once when it has none).
    if (stopped_) return;
    const bool immediate = !lost_now_.empty();
    for (rd::WorkerResult& r : lost_now_) out.push_back(std::move(r));
    lost_now_.clear();
    const double timeout =
        immediate ? 0.0
                  : std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count());
    Gil gil;
    for (const FinishedCall& done : backend_.wait(timeout)) {
      auto it = pending_.find(done.token);
      if (it == pending_.end()) continue;
      Pending p = std::move(it->second);
      pending_.erase(it);
      const int pool = p.pool;
      const int actor = p.actor;
      const bool same_actor = p.actor_epoch == actor_epochs_[pool][actor];
      out.push_back(result(std::move(p), done.report));
      // A call reported early still holds its actor in Ray (the backend says when no such
      // call does: take_resumed()); the driver sends the actor nothing meanwhile, unless the
      // actor was replaced since the call was sent or the driver drops the result.
      out.back().actor_held = done.report.actor_held && same_actor && out.back().current;
    }
  }

  void replace(int pool, int slot) override {
    ++epochs_[pool][slot];
    const int actor = actor_of(pool, slot);
    // Tasks queued at the same actor die with it and come back as lost (it was replaced
    // already, so they replace nothing). No pool with a timeout has more than one task slot
    // per actor, though (Module options): a queued task's wait would count against its
    // timeout.
    ++actor_epochs_[pool][actor];
    cache_->reset(pool, actor);
    Gil gil;  // for the Python error, if any
    try {
      backend_.replace(pool, actor);
    } catch (const nb::python_error& e) {
      throw ExecutionError(fmt::format("replacing a Ray actor of pool {} failed: {}",
                                       plan_->pools[pool].name, e.what()));
    }
  }

  bool restart_held(int pool, int actor) override {
    forget_actor(pool, actor);
    on_backend("restarting a held actor of", pool, [&] { backend_.restart_held(pool, actor); });
    return true;
  }

  void stop() noexcept override {
    if (stopped_ || !python_alive()) return;
    stopped_ = true;
    Gil gil;
    pending_.clear();
    try {
      backend_.stop();
    } catch (const nb::python_error& e) {
      PySys_WriteStderr("rayorch: stopping the Ray actors: %s\n", e.what());
    } catch (...) {
      // Stopping never throws; the actors go with the cluster or the driver.
    }
  }

 private:
  // Runs `call` (a call of the Python backend that starts or retires an actor of `pool`) with
  // the GIL held; a Python error becomes an ExecutionError naming the pool and `doing`.
  template <class Call>
  void on_backend(const char* doing, int pool, Call call) {
    Gil gil;
    try {
      call();
    } catch (const nb::python_error& e) {
      throw ExecutionError(fmt::format("{} a Ray actor of pool {} failed: {}", doing,
                                       plan_->pools[pool].name, e.what()));
    }
  }

  struct Pending {
    std::uint64_t run = 0;
    int pool = -1;
    int slot = -1;                  // the task slot (the driver's worker)
    int actor = -1;                 // the actor of the task slot
    std::uint64_t epoch = 0;        // the task slot's incarnation at submission
    std::uint64_t actor_epoch = 0;  // the actor's incarnation at submission
    rd::Invocation invocation;
    std::vector<Ref> blocks;  // the ObjectRefs of the output blocks, in output order
    Clock::time_point submitted;
    std::vector<ActorBlockCache::Send> sends;  // the input blocks this call carried
    std::vector<rd::BlockId> evicted;          // blocks this call told the actor to drop
    std::vector<rd::BlockRef> sent;            // the input blocks it carried by ObjectRef
    std::vector<rd::BlockId> kept;             // the output blocks the actor keeps
  };

  // Builds the result of one finished call (the caller holds the GIL).
  rd::WorkerResult result(Pending p, const CallReport& report) {
    rd::WorkerResult r;
    r.run = p.run;
    r.pool = p.pool;
    r.slot = p.slot;
    r.current = p.epoch == epochs_[p.pool][p.slot];
    rd::Attempt& a = r.attempt;
    a.report.invocation = p.invocation.id;
    a.report.input_batch = p.invocation.input_batch;
    a.start = p.submitted;
    a.end = Clock::now();
    // False when the actor that ran the call was replaced after it was sent (another of its
    // queued calls reported the loss first): nothing the call did concerns its successor.
    const bool same_actor = p.actor_epoch == actor_epochs_[p.pool][p.actor];
    const bool ran = ran_on_actor(report.status);
    // Ran: the actor dropped the evicted blocks and keeps the ones sent.
    cache_->arrived(p.pool, p.actor, p.sends, r.current && ran && same_actor);
    if (!r.current) return r;  // the generation fence rejects it; its blocks go with `p`
    if (ran) {
      a.start = from_wall_seconds(report.start_s);
      a.end = from_wall_seconds(report.end_s);
    } else if (same_actor && report.status != CallStatus::actor_lost) {
      // The call did not finish in the actor: the blocks it was to drop may still be there.
      cache_->requeue_evictions(p.pool, p.actor, p.evicted);
    }
    switch (report.status) {
      case CallStatus::ok: {
        a.kind = rd::Attempt::Kind::ok;
        a.report = rd::decode_report(report.report);
        std::size_t j = 0;
        for (const rd::OutputSlot& s : p.invocation.outputs) {
          const bool kept = std::find(p.kept.begin(), p.kept.end(), s.block) != p.kept.end();
          // The store records the actor as the block's holder when the block is put; an actor
          // replaced since holds nothing (actor -1: the block is lost, rebuilt when read).
          BlockHolder holder;
          if (kept) holder = {p.pool, same_actor ? p.actor : -1};
          a.blocks.emplace_back(
              s.block, std::make_shared<RemoteBlock>(s.block, std::move(p.blocks[j++]), holder));
          if (s.child_block != 0) {
            a.blocks.emplace_back(s.child_block, std::make_shared<RemoteBlock>(
                                                     s.child_block, std::move(p.blocks[j++])));
          }
        }
        break;
      }
      case CallStatus::call_failed:
      case CallStatus::ray_error:
        a.kind = rd::Attempt::Kind::failed;
        a.error = report.error;
        break;
      case CallStatus::udf_lost:
      case CallStatus::udf_lost_unrebuilt:
        // The actor rebuilt its UDF instance (or could not).
        a.kind = rd::Attempt::Kind::lost;
        a.error = report.error;
        r.rebuilt = true;
        if (report.status == CallStatus::udf_lost_unrebuilt)
          r.fatal = "replacing a lost actor failed: " + report.rebuild_error;
        break;
      case CallStatus::actor_lost:
        // The actor (or its node) is gone: a fresh actor takes its place, the Grains replay.
        a.kind = rd::Attempt::Kind::lost;
        a.error = report.error;
        if (same_actor) {
          r.rebuilt = true;
          restart_lost(p.pool, p.actor, r);
        } else {
          r.loss_counted = true;
        }
        break;
      case CallStatus::block_lost:
        a.kind = rd::Attempt::Kind::inputs_lost;
        a.error = report.error;
        a.lost_blocks = lost_inputs(p.sent, report.lost_object);
        break;
    }
    return r;
  }

  // A new actor takes the place of (pool, actor): what the old one held (blocks) is gone with
  // it; the backend forgets the calls held at it.
  void forget_actor(int pool, int actor) {
    ++actor_epochs_[pool][actor];
    cache_->reset(pool, actor);
  }

  // Restarts an actor that Ray reported lost, in the background and on another node where it
  // can: the driver takes it for a starting actor until take_actor_events() reports it (the caller
  // holds the GIL). Calls held at the lost actor hold nothing any more.
  void restart_lost(int pool, int actor, rd::WorkerResult& r) {
    forget_actor(pool, actor);
    try {
      backend_.restart_lost(pool, actor);
    } catch (const nb::python_error& e) {
      r.fatal = fmt::format("replacing a lost Ray actor of pool {} failed: {}",
                            plan_->pools[pool].name, e.what());
      return;
    }
    r.actor_restarting = true;
  }

  std::shared_ptr<const rd::RuntimePlan> plan_;
  RayBackendClient backend_;
  std::vector<int> actors_;  // per pool: its Ray actors
  std::vector<int> slots_;   // per pool: its task slots (actors x max tasks in flight)
  std::size_t total_ = 0;
  std::vector<std::vector<std::uint64_t>> epochs_;        // per task slot: its incarnation
  std::vector<std::vector<std::uint64_t>> actor_epochs_;  // per actor: its incarnation
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::uint64_t tokens_ = 0;
  bool stopped_ = false;
  // How long a pool may wait for its first actor (the backend's actor_startup_timeout_s).
  Clock::duration start_timeout_{};
  std::shared_ptr<ActorBlockCache> cache_;       // shared with the run's store
  std::vector<std::vector<char>> kept_outputs_;  // per Call and output (ray_block_locality.h)
  // Calls not sent for lost inputs (lost_inputs_result), returned by the next wait().
  std::vector<rd::WorkerResult> lost_now_;
};

}  // namespace

std::unique_ptr<rd::WorkerPools> make_ray_pools(std::shared_ptr<const rd::RuntimePlan> plan,
                                                nb::object backend) {
  return std::make_unique<RayPools>(std::move(plan), std::move(backend));
}

}  // namespace rayorch::python
