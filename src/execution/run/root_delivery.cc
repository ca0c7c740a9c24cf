// Root delivery. See root_delivery.h.
#include "execution/run/root_delivery.h"

namespace rayorch::detail {

RootDelivery::RootDelivery(const RunOptions& options, const RootSink& sink)
    : sink_(sink), budget_(options) {}

bool RootDelivery::lost_outputs(Engine& e, std::uint32_t root, BlockStore& store) {
  present_.clear();
  for (std::size_t k = 0; k < outcomes_.size(); ++k)
    if (outcomes_[k] == Outcome::present) present_.push_back(values_[k]);
  std::string reason;
  const std::vector<BlockId> lost = store.unreadable(present_, reason);
  if (lost.empty()) return false;
  // Rebuilt from lineage; the engine finishes the root again once they are (DESIGN 5.13).
  e.outputs_lost(root, lost, reason);
  return true;
}

void RootDelivery::deliver(Engine& e, BlockStore& store, const InputBatches& batches,
                           RunRecorder& recorder, RunEvents& events) {
  const std::vector<std::uint32_t> roots = e.take_finished_roots();
  if (store.fetches() && roots.size() > 1) {
    // A remote store fetches the blocks of all these outputs in one round trip.
    std::vector<Binding> wanted;
    for (std::uint32_t root : roots) {
      e.root_outputs(root, outcomes_, causes_, values_);
      for (std::size_t k = 0; k < outcomes_.size(); ++k)
        if (outcomes_[k] == Outcome::present) wanted.push_back(values_[k]);
    }
    store.prefetch(wanted);
  }
  for (std::uint32_t root : roots) {
    const std::size_t row = e.first_row() + root;
    e.root_outputs(root, outcomes_, causes_, values_);
    if (store.fetches() && lost_outputs(e, root, store)) continue;
    erased_.resize(outcomes_.size());
    for (std::size_t k = 0; k < outcomes_.size(); ++k) {
      const void* value = outcomes_[k] == Outcome::present ? store.resolve(values_[k]) : nullptr;
      erased_[k] = ErasedOutput{outcomes_[k], causes_[k], value, std::nullopt};
      IssueOrigin origin;
      if (outcomes_[k] != Outcome::present && e.root_issue_origin(root, k, origin))
        erased_[k].origin = std::move(origin);
    }
    Outcome root_outcome = Outcome::present;
    for (Outcome o : outcomes_) {
      if (o != Outcome::present) {
        root_outcome = o;
        break;
      }
    }
    const double seconds = recorder.root_delivered(row, root_outcome);
    ++delivered_;
    if (root_outcome == Outcome::failed || root_outcome == Outcome::suppressed) {
      budget_.count_failed(batches.caller_row(row), erased_, delivered_);
    }
    sink_(row, erased_);
    if (!events.empty()) events.root(RootEvent{batches.caller_row(row), root_outcome, seconds});
    e.root_delivered(root);
  }
}

}  // namespace rayorch::detail
