// The deterministic backend: one UDF instance per pool, every task run on the driver's
// thread inside wait(), so a run's RPC sequence depends on nothing but the program, its
// inputs and its options.
#include <deque>

#include "rayorch/errors.h"

#include "execution/backends/backends.h"
#include "execution/crash_record.h"
#include "runtime/protocol_codec.h"

namespace rayorch::detail {
namespace {

class InlinePools final : public WorkerPools {
 public:
  InlinePools(std::shared_ptr<const RuntimePlan> plan, bool wire)
      : plan_(std::move(plan)), wire_(wire) {
    for (std::size_t pool = 0; pool < plan_->pools.size(); ++pool) {
      std::string error;
      auto instance = build_instance(*plan_, static_cast<int>(pool), error);
      if (!instance) throw ExecutionError(error);
      instances_.push_back(std::move(instance));
    }
  }

  std::vector<int> sizes() const override { return std::vector<int>(instances_.size(), 1); }
  std::size_t max_outstanding() const override { return 1; }
  bool in_driver_process(int) const override { return true; }

  void submit(WorkerTask task) override { pending_.push_back(std::move(task)); }

  void wait(Clock::time_point, std::vector<WorkerResult>& out) override {
    while (!pending_.empty()) {
      WorkerTask task = std::move(pending_.front());
      pending_.pop_front();
      out.push_back(run(task));
    }
  }

  void replace(int pool, int) override { rebuild(pool, ""); }

  void stop() noexcept override {
    pending_.clear();
    instances_.clear();
  }

 private:
  WorkerResult run(const WorkerTask& task) {
    WorkerResult r;
    r.run = task.run;
    r.pool = task.pool;
    r.slot = task.slot;
    // With `wire_`, the worker sees only what crossed as bytes, and so does the driver.
    const Invocation inv = wire_ ? decode_invocation(encode(task.invocation)) : task.invocation;
    {
      const CrashScope scope(task.crash_label);
      r.attempt = invoke_call(*plan_, inv, *instances_[task.pool], task.inputs);
    }
    if (wire_ && r.attempt.kind == Attempt::Kind::ok)
      r.attempt.report = decode_report(encode(r.attempt.report));
    if (r.attempt.kind == Attempt::Kind::lost) {
      r.rebuilt = true;
      try {
        rebuild(task.pool, "replacing a lost actor failed: ");
      } catch (const ExecutionError& e) {
        r.fatal = e.what();
      }
    }
    return r;
  }

  void rebuild(int pool, const char* context) {
    std::string error;
    auto fresh = build_instance(*plan_, pool, error);
    if (!fresh) throw ExecutionError(context + error);
    instances_[pool] = std::move(fresh);
  }

  std::shared_ptr<const RuntimePlan> plan_;
  bool wire_ = false;
  std::vector<std::unique_ptr<UdfInstance>> instances_;
  std::deque<WorkerTask> pending_;
};

}  // namespace

std::unique_ptr<WorkerPools> make_inline_pools(std::shared_ptr<const RuntimePlan> plan, bool wire) {
  return std::make_unique<InlinePools>(std::move(plan), wire);
}

}  // namespace rayorch::detail
