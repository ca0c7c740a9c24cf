// A simulated node loss for tests of re-materialisation (DESIGN 5.13): the deterministic
// pools of SyncExecutor, plus one node that holds the blocks some pools produce and goes
// away once; from then on an RPC that reads one of its blocks reports them lost, as the Ray
// backend reports an ObjectLostError, instead of running, and the store cannot read them to
// deliver outputs either. The pools report the node's loss (take_node_losses) when it goes.
#pragma once

#include <algorithm>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <rayorch/rayorch.h>

#include "execution/backends/backends.h"
#include "execution/cores.h"

namespace lossy {

namespace ro = rayorch;
namespace rd = rayorch::detail;

// The store of a run on LossyPools: the inner store, except that the blocks on the node
// that went cannot be read to deliver outputs.
class LossyStore final : public rd::BlockStore {
 public:
  LossyStore(std::unique_ptr<rd::BlockStore> inner,
             std::shared_ptr<const std::set<rd::BlockId>> lost)
      : inner_(std::move(inner)), lost_(std::move(lost)) {}
  bool put(rd::BlockId id, rd::BlockRef block) override {
    return inner_->put(id, std::move(block));
  }
  const void* resolve(const rd::Binding& b) override {
    if (lost_->count(b.block) != 0) throw std::logic_error("a lost block was resolved");
    return inner_->resolve(b);
  }
  rd::ResolvedInputs resolve_inputs(const rd::Invocation& inv) const override {
    return inner_->resolve_inputs(inv);
  }
  void apply(const std::vector<rd::StoreCommand>& commands) override { inner_->apply(commands); }
  void release_batch(std::size_t batch) override { inner_->release_batch(batch); }
  bool fetches() const override { return true; }
  bool can_lose_values() const override { return true; }
  std::vector<rd::BlockId> unreadable(const std::vector<rd::Binding>& values,
                                      std::string& reason) override {
    std::vector<rd::BlockId> out;
    for (const rd::Binding& b : values) {
      if (lost_->count(b.block) != 0 && std::find(out.begin(), out.end(), b.block) == out.end())
        out.push_back(b.block);
    }
    if (!out.empty()) reason = "ObjectLostError: the node holding it is gone";
    return out;
  }

 private:
  std::unique_ptr<rd::BlockStore> inner_;
  std::shared_ptr<const std::set<rd::BlockId>> lost_;
};

// The pools of SyncExecutor, plus one node: it holds every block the pools in `on_node`
// produce until it goes, which happens when the `trigger` pool's call number `after` (0:
// its first) is submitted, or, with `results_before_loss` >= 0, as soon as that many
// results of the pools in `on_node` have come back and before the driver reads them; from
// then on every RPC that reads one of its blocks reports them lost instead of running. With
// `lose_inputs`, the blocks that call reads are on it too.
class LossyPools final : public rd::WorkerPools {
 public:
  LossyPools(std::unique_ptr<rd::WorkerPools> inner, std::set<int> on_node, int trigger, int after,
             bool lose_inputs, int results_before_loss = -1)
      : inner_(std::move(inner)),
        on_node_(std::move(on_node)),
        trigger_(trigger),
        after_(after),
        lose_inputs_(lose_inputs),
        results_before_loss_(results_before_loss) {}

  /// Reports name only the first lost input of a call, as Ray's ObjectLostError names the
  /// one argument it could not fetch: a call that read several lost blocks learns of them
  /// one report at a time.
  void name_one_lost_block_per_report() { one_per_report_ = true; }

  std::unique_ptr<rd::BlockStore> make_store(std::shared_ptr<const rd::RuntimePlan> p) override {
    return std::make_unique<LossyStore>(inner_->make_store(std::move(p)), lost_);
  }
  void take_node_losses(std::vector<rd::NodeLoss>& out) override {
    for (rd::NodeLoss& l : losses_) out.push_back(std::move(l));
    losses_.clear();
  }
  std::vector<int> sizes() const override { return inner_->sizes(); }
  std::size_t max_outstanding() const override { return inner_->max_outstanding(); }
  void replace(int pool, int slot) override { inner_->replace(pool, slot); }
  void stop() noexcept override { inner_->stop(); }

  void submit(rd::WorkerTask task) override {
    if (!gone_ && task.pool == trigger_ && after_-- == 0) {
      go();
      if (lose_inputs_) {
        for (const auto& column : task.invocation.inputs)
          for (const rd::Binding& b : column) lost_->insert(b.block);
      }
    }
    std::vector<rd::BlockId> lost;
    for (const auto& column : task.invocation.inputs) {
      for (const rd::Binding& b : column) {
        if (lost_->count(b.block) != 0 &&
            std::find(lost.begin(), lost.end(), b.block) == lost.end())
          lost.push_back(b.block);
      }
    }
    if (lost.empty()) {
      inner_->submit(std::move(task));
      return;
    }
    if (one_per_report_) lost.resize(1);
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
      if (results_before_loss_ >= 0 && --results_before_loss_ < 0) go();
    }
  }

 private:
  std::unique_ptr<rd::WorkerPools> inner_;
  std::set<int> on_node_;
  int trigger_;
  int after_;
  // The node goes: every block it holds is lost, and the loss is reported.
  void go() {
    gone_ = true;
    *lost_ = held_;
    losses_.push_back(rd::NodeLoss{.node = "node-1",
                                   .address = "127.0.0.1:6001",
                                   .at = Clock::now(),
                                   .cause = "ObjectLostError: the node holding it is gone"});
  }

  bool lose_inputs_;
  int results_before_loss_;
  bool one_per_report_ = false;
  bool gone_ = false;
  std::set<rd::BlockId> held_;
  std::shared_ptr<std::set<rd::BlockId>> lost_ = std::make_shared<std::set<rd::BlockId>>();
  std::vector<rd::WorkerResult> answers_;
  std::vector<rd::NodeLoss> losses_;
};

template <class P>
class LossyExecutor : public rd::RunApiOf<P> {
 public:
  LossyExecutor(const ro::Compiled<P>& program, std::unique_ptr<LossyPools> pools)
      : rd::RunApiOf<P>(rd::make_driven_core(program.plan(), std::move(pools),
                                             rd::DriverOptions{.keep_rpc_log = true})) {}
  std::vector<std::string> rpcs() const {
    std::vector<std::string> out;
    for (const auto& r : this->core().rpc_log()) out.push_back(r.to_string());
    return out;
  }
};

}  // namespace lossy
