// A simulated node loss for tests of re-materialisation (DESIGN 5.13): the deterministic
// pools of SyncExecutor, plus one node that holds the blocks some pools produce and goes
// away once; from then on an RPC that reads one of its blocks reports them lost, as the Ray
// backend reports an ObjectLostError, instead of running.
#pragma once

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <rayorch/rayorch.h>

#include "execution/backends/backends.h"
#include "execution/driver.h"

namespace lossy {

namespace ro = rayorch;
namespace rd = rayorch::detail;

// The pools of SyncExecutor, plus one node: it holds every block the pools in `on_node`
// produce until it goes, which happens when the `trigger` pool's call number `after` (0:
// its first) is submitted; from then on every RPC that reads one of its blocks reports them
// lost instead of running. With `lose_inputs`, the blocks that call reads are on it too.
class LossyPools final : public rd::WorkerPools {
 public:
  LossyPools(std::unique_ptr<rd::WorkerPools> inner, std::set<int> on_node, int trigger, int after,
             bool lose_inputs)
      : inner_(std::move(inner)),
        on_node_(std::move(on_node)),
        trigger_(trigger),
        after_(after),
        lose_inputs_(lose_inputs) {}

  std::unique_ptr<rd::BlockStore> make_store(std::shared_ptr<const rd::RuntimePlan> p) override {
    return inner_->make_store(std::move(p));
  }
  std::vector<int> sizes() const override { return inner_->sizes(); }
  std::size_t max_outstanding() const override { return inner_->max_outstanding(); }
  void replace(int pool, int slot) override { inner_->replace(pool, slot); }
  void stop() noexcept override { inner_->stop(); }

  void submit(rd::WorkerTask task) override {
    if (!gone_ && task.pool == trigger_ && after_-- == 0) {
      gone_ = true;
      lost_ = held_;
      if (lose_inputs_) {
        for (const auto& column : task.invocation.inputs)
          for (const rd::Binding& b : column) lost_.insert(b.block);
      }
    }
    std::vector<rd::BlockId> lost;
    for (const auto& column : task.invocation.inputs) {
      for (const rd::Binding& b : column) {
        if (lost_.count(b.block) != 0 && std::find(lost.begin(), lost.end(), b.block) == lost.end())
          lost.push_back(b.block);
      }
    }
    if (lost.empty()) {
      inner_->submit(std::move(task));
      return;
    }
    rd::WorkerResult r;
    r.run = task.run;
    r.pool = task.pool;
    r.slot = task.slot;
    r.attempt.kind = rd::Attempt::Kind::inputs_lost;
    r.attempt.lost_blocks = std::move(lost);
    r.attempt.error = "ObjectLostError: the node holding it is gone";
    answers_.push_back(std::move(r));
  }

  void wait(Clock::time_point deadline, std::vector<rd::WorkerResult>& out) override {
    for (rd::WorkerResult& r : answers_) out.push_back(std::move(r));
    answers_.clear();
    const std::size_t before = out.size();
    inner_->wait(deadline, out);
    for (std::size_t i = before; i < out.size(); ++i) {
      if (gone_ || on_node_.count(out[i].pool) == 0) continue;
      for (const auto& [id, block] : out[i].attempt.blocks) held_.insert(id);
    }
  }

 private:
  std::unique_ptr<rd::WorkerPools> inner_;
  std::set<int> on_node_;
  int trigger_;
  int after_;
  bool lose_inputs_;
  bool gone_ = false;
  std::set<rd::BlockId> held_, lost_;
  std::vector<rd::WorkerResult> answers_;
};

template <class P>
class LossyExecutor : public rd::RunApiOf<P> {
 public:
  LossyExecutor(const ro::Compiled<P>& program, std::unique_ptr<LossyPools> pools)
      : rd::RunApiOf<P>(std::make_unique<rd::Driver>(program.plan(), std::move(pools),
                                                     rd::DriverOptions{.keep_rpc_log = true})) {}
  std::vector<std::string> rpcs() const {
    std::vector<std::string> out;
    for (const auto& r : this->core().rpc_log()) out.push_back(r.to_string());
    return out;
  }
};

}  // namespace lossy
