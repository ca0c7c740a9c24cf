// The deterministic single-thread core behind testing::SyncExecutor.
#include <fmt/format.h>

#include "rayorch/errors.h"
#include "rayorch/executor.h"

#include "execution/invoke.h"
#include "execution/run_state.h"
#include "runtime/protocol_codec.h"

namespace rayorch::detail {
namespace {

class SyncCore final : public ExecutionCore {
 public:
  SyncCore(std::shared_ptr<const RuntimePlan> plan, bool wire)
      : plan_(std::move(plan)), wire_(wire) {
    for (std::size_t pool = 0; pool < plan_->pools.size(); ++pool) {
      std::string error;
      auto instance = build_instance(*plan_, static_cast<int>(pool), error);
      if (!instance) {
        instances_.clear();
        throw ExecutionError(error);
      }
      instances_.push_back(std::move(instance));
    }
  }

  RunMetrics run(SourceData sources, const RunOptions& options, const RootSink& sink) override {
    if (closed_) {
      throw ExecutionError(
          "this executor is closed (after close() or an aborted run); create a "
          "new executor to run again");
    }
    return run_impl(std::move(sources), options, sink);
  }

  void close() override {
    closed_ = true;
    instances_.clear();
  }
  bool closed() const override { return closed_; }
  const std::vector<RpcRecord>& rpc_log() const override { return log_; }

 private:
  RunMetrics run_impl(SourceData sources, const RunOptions& options, const RootSink& sink) {
    RunState state(plan_, std::move(sources), options, sink,
                   std::vector<int>(plan_->pools.size(), 1), wire_);
    // Bad options throw above, before anything ran, and leave the executor usable. An
    // unrecoverable failure or an exception from the streaming callback closes it, as on
    // the local executor.
    try {
      return drive(state);
    } catch (const std::exception& e) {
      state.write_aborted(e.what());
      close();
      throw;
    } catch (...) {
      close();
      throw;
    }
  }

  RunMetrics drive(RunState& state) {
    state.admit();
    state.settle();
    std::size_t cursor = 0;
    const std::size_t np = plan_->pools.size();
    // A pick that finds only barriered Grains seals them without dispatching; the facts that
    // publishes can make other Grains READY, so only a second idle round is a deadlock.
    int idle_rounds = 0;
    while (!state.done()) {
      bool dispatched = false;
      for (std::size_t k = 0; k < np && !dispatched; ++k) {
        const std::size_t p = (cursor + k) % np;
        auto d = state.pick(static_cast<int>(p));
        if (!d) continue;
        cursor = p + 1;
        dispatched = true;
        execute(state, *d, static_cast<int>(p));
      }
      state.settle();
      idle_rounds = dispatched ? 0 : idle_rounds + 1;
      if (idle_rounds >= 2 && !state.done()) {
        throw ExecutionError(
            "deadlock: input batches are incomplete but no Grain is "
            "dispatchable and nothing is in flight");
      }
    }
    return state.finish();
  }

  void execute(RunState& state, Dispatch& d, int pool) {
    const PlanCall& call = plan_->calls[d.batch.call];
    RpcRecord rec;
    rec.call = call.name;
    rec.input_batch = d.engine->batch_index();
    for (std::size_t i = 0; i < d.batch.grains.size(); ++i) {
      rec.grains.push_back(d.engine->entity_key(call.domain, d.batch.grains[i]));
      rec.generations.push_back(d.batch.generations[i]);
    }
    // With `wire_`, the worker sees only what crossed as bytes, and so does the engine.
    const Invocation inv = wire_ ? decode_invocation(encode(d.batch)) : d.batch;
    Attempt a = invoke_call(*plan_, inv, *instances_[pool], state.store().resolve_inputs(inv));
    if (wire_) a.report = decode_report(encode(a.report));
    rec.failed = a.kind != Attempt::Kind::ok;
    log_.push_back(rec);
    switch (a.kind) {
      case Attempt::Kind::ok:
        state.record_rpc(d, 0, a.start, a.end, "ok");
        state.apply_result(d, a);
        break;
      case Attempt::Kind::failed:
        state.record_rpc(d, 0, a.start, a.end, "failed");
        state.apply_failure(d, a.error);
        break;
      case Attempt::Kind::lost: {
        state.record_rpc(d, 0, a.start, a.end, "lost");
        std::string error;
        auto fresh = build_instance(*plan_, pool, error);
        if (!fresh) throw ExecutionError("replacing a lost actor failed: " + error);
        instances_[pool] = std::move(fresh);
        ++state.actors_replaced();
        state.apply_lost(d, a.error);
        break;
      }
    }
  }

  std::shared_ptr<const RuntimePlan> plan_;
  std::vector<std::unique_ptr<UdfInstance>> instances_;
  std::vector<RpcRecord> log_;
  bool wire_ = false;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<ExecutionCore> make_sync_core(std::shared_ptr<const RuntimePlan> plan, bool wire) {
  return std::make_unique<SyncCore>(std::move(plan), wire);
}

}  // namespace rayorch::detail

namespace rayorch {

std::string RpcRecord::to_string() const {
  std::string keys;
  for (const auto& g : grains) keys += (keys.empty() ? "" : " ") + g;
  bool uniform = true;
  for (auto g : generations) uniform = uniform && g == generations.front();
  std::string gens;
  if (uniform && !generations.empty()) {
    gens = fmt::format("g{}", generations.front());
  } else {
    for (auto g : generations) gens += fmt::format("{}g{}", gens.empty() ? "" : ",", g);
  }
  return fmt::format("{} [{}] {}{}", call, keys, gens, failed ? " failed" : "");
}

}  // namespace rayorch
