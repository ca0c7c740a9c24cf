// The rig of the root delivery test (tests/execution/run/root_delivery_test.cc): a
// RootDelivery with the real objects RunState gives it (an engine driven by hand through
// EngineRig, the input batches, the recorder, the observers' events), a sink and an observer
// that record what they receive, and a block store that can pretend to fetch from elsewhere
// and to lose blocks.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "support/runtime_harness.h"
#include <gtest/gtest.h>

#include <rayorch/rayorch.h>

#include "execution/run/root_delivery.h"
#include "execution/value_store.h"

namespace root_delivery_test {

using runtime_test::EngineRig;
namespace ro = rayorch;
namespace rd = rayorch::detail;

// What the sink received for one root: per output, its outcome, cause ("" for none), value
// (copied while the sink runs; the ints of these programs) and origin.
struct Delivered {
  std::size_t row = 0;
  std::vector<ro::Outcome> outcomes;
  std::vector<std::string> causes;
  std::vector<std::optional<int>> values;
  std::vector<std::optional<ro::IssueOrigin>> origins;
  std::vector<bool> below_root;
};

// An observer keeping the RootEvents, and "on_root <row>" in the log the sink writes to.
class RootLog final : public ro::RunObserver {
 public:
  explicit RootLog(std::vector<std::string>& log) : log_(log) {}
  void on_root(const ro::RootEvent& e) override {
    events.push_back(e);
    log_.push_back("on_root " + std::to_string(e.row));
  }
  std::vector<ro::RootEvent> events;

 private:
  std::vector<std::string>& log_;
};

// The parts of a run's state that RootDelivery::deliver reads and writes (as RunState holds
// them), over `rows` source rows numbered by the caller as `original_rows` (identity when
// empty), with a sink that records what it receives.
struct Delivery {
  Delivery(std::shared_ptr<const rd::RuntimePlan> plan, std::size_t rows, ro::RunOptions o = {},
           std::vector<std::size_t> original_rows = {})
      : observer(std::make_shared<RootLog>(log)),
        options(with_observer(std::move(o), observer)),
        sources(source_rows(rows, std::move(original_rows))),
        recorder(*plan, sources, std::vector<int>(plan->pools.size(), 1)),
        events(options),
        batches(plan, sources, options),
        delivery(options, sink) {}
  Delivery(const Delivery&) = delete;
  Delivery& operator=(const Delivery&) = delete;

  void deliver(rd::Engine& e, rd::BlockStore& store) {
    delivery.deliver(e, store, batches, recorder, events);
  }
  // The rows the sink received, in order.
  std::vector<std::size_t> rows() const {
    std::vector<std::size_t> out;
    for (const Delivered& d : got) out.push_back(d.row);
    return out;
  }
  const std::vector<ro::RootEvent>& root_events() const { return observer->events; }
  std::map<std::string, std::uint64_t> roots_by_outcome() const {
    return recorder.metrics().roots_by_outcome;
  }
  double completed(std::size_t row) const {
    return recorder.metrics().root_completed_seconds.at(row);
  }

  static ro::RunOptions with_observer(ro::RunOptions o, std::shared_ptr<RootLog> root_log) {
    o.progress = false;
    o.observers.push_back(std::move(root_log));
    return o;
  }
  static rd::SourceData source_rows(std::size_t rows, std::vector<std::size_t> original_rows) {
    rd::SourceData s;
    s.rows = rows;
    s.original_rows = std::move(original_rows);
    return s;
  }

  std::vector<std::string> log;  // "sink <row>" and "on_root <caller row>", in order
  std::vector<Delivered> got;
  std::shared_ptr<RootLog> observer;
  ro::RunOptions options;
  rd::SourceData sources;
  rd::RootCallback sink = [this](std::size_t row, std::span<const rd::ErasedOutput> outputs) {
    log.push_back("sink " + std::to_string(row));
    Delivered d{.row = row};
    for (const rd::ErasedOutput& out : outputs) {
      d.outcomes.push_back(out.outcome);
      d.causes.push_back(out.cause != nullptr ? *out.cause : "");
      d.values.push_back(out.value != nullptr
                             ? std::optional<int>(*static_cast<const int*>(out.value))
                             : std::nullopt);
      d.origins.push_back(out.origin);
      d.below_root.push_back(out.below_root);
    }
    got.push_back(std::move(d));
  };
  rd::RunRecorder recorder;
  rd::RunEvents events;
  rd::InputBatches batches;
  rd::RootDelivery delivery;
};

// The rig's blocks as a BlockStore; `fetches` makes it one whose blocks live elsewhere (as
// Ray's), which reports the blocks in `lost` unreadable. Logs "prefetch <n>", "unreadable"
// and "resolve" in the order it is asked.
class RigStore final : public rd::BlockStore {
 public:
  explicit RigStore(const EngineRig& rig, bool fetches = false) : rig_(rig), fetches_(fetches) {}

  bool put(rd::BlockId, rd::BlockRef) override { throw std::logic_error("not for delivery"); }
  const void* resolve(const rd::Binding& b) override {
    calls.push_back("resolve");
    return rig_.store().address(b);
  }
  rd::ResolvedInputs resolve_inputs(const rd::Invocation&) const override {
    throw std::logic_error("not for delivery");
  }
  void apply(const std::vector<rd::StoreCommand>&) override {
    throw std::logic_error("not for delivery");
  }
  void release_batch(std::size_t) override { throw std::logic_error("not for delivery"); }
  bool fetches() const override { return fetches_; }
  void prefetch(const std::vector<rd::Binding>& values) override {
    calls.push_back("prefetch " + std::to_string(values.size()));
    prefetched.push_back(values);
  }
  std::vector<rd::BlockId> unreadable(const std::vector<rd::Binding>& values,
                                      std::string& reason) override {
    calls.push_back("unreadable");
    std::set<rd::BlockId> blocks;
    for (const rd::Binding& b : values)
      if (lost.count(b.block) != 0) blocks.insert(b.block);
    if (!blocks.empty()) reason = "node 7 lost";
    return {blocks.begin(), blocks.end()};
  }

  std::set<rd::BlockId> lost;
  std::vector<std::string> calls;
  std::vector<std::vector<rd::Binding>> prefetched;

 private:
  const EngineRig& rig_;
  bool fetches_;
};

// Reserves one batch per root of `call` (batch_size 1), batch i holding root i.
inline std::vector<rd::Invocation> reserve_each(EngineRig& rig, int call, int roots) {
  std::vector<rd::Invocation> out;
  for (int i = 0; i < roots; ++i) {
    out.push_back(rig.reserve(call));
    EXPECT_EQ(rig.keys(out.back()), std::to_string(i));
  }
  return out;
}

}  // namespace root_delivery_test
