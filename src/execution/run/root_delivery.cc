// Root delivery. See root_delivery.h.
#include "execution/run/root_delivery.h"

namespace rayorch::detail {

RootDelivery::RootDelivery(const RunOptions& options, const RootCallback& sink)
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
      e.root_outputs(root, outcomes_, causes_, values_, items_);
      for (std::size_t k = 0; k < outcomes_.size(); ++k)
        if (outcomes_[k] == Outcome::present) wanted.push_back(values_[k]);
    }
    store.prefetch(wanted);
  }
  for (std::uint32_t root : roots) {
    const std::size_t row = e.first_row() + root;
    e.root_outputs(root, outcomes_, causes_, values_, items_);
    if (store.fetches() && lost_outputs(e, root, store)) continue;
    // The root's outcome is that of its first root-Domain output that is not present; the
    // Items of an output below the root do not decide it.
    Outcome root_outcome = Outcome::present;
    std::size_t deciding = 0;  // erased_'s entry of the output that decided root_outcome
    erased_.clear();
    std::size_t at = 0;  // the next entry of outcomes_ and values_
    for (std::size_t k = 0; k < items_.size(); ++k) {
      const bool below = e.output_below_root(k);
      if (below)
        erased_.push_back(
            ErasedOutput{.outcome = Outcome::present, .below_root = true, .children = items_[k]});
      for (std::uint32_t i = 0; i < items_[k]; ++i, ++at) {
        const void* value =
            outcomes_[at] == Outcome::present ? store.resolve(values_[at]) : nullptr;
        ErasedOutput out{outcomes_[at], causes_[at], value, std::nullopt};
        IssueOrigin origin;
        if (outcomes_[at] != Outcome::present && e.root_issue_origin(root, k, i, origin))
          out.origin = std::move(origin);
        if (!below && root_outcome == Outcome::present && outcomes_[at] != Outcome::present) {
          root_outcome = outcomes_[at];
          deciding = erased_.size();
        }
        erased_.push_back(std::move(out));
      }
    }
    const double seconds = recorder.root_delivered(row, root_outcome);
    ++delivered_;
    if (root_outcome == Outcome::failed || root_outcome == Outcome::suppressed) {
      budget_.count_failed(batches.caller_row(row), erased_, delivered_);
    }
    sink_(row, erased_);
    if (!events.empty()) {
      RootEvent event{batches.caller_row(row), root_outcome, seconds};
      if (root_outcome != Outcome::present) {
        const ErasedOutput& out = erased_[deciding];
        if (out.cause != nullptr) event.cause = *out.cause;
        if (out.origin) {
          event.call = out.origin->call;
          event.entity = out.origin->entity;
        }
      }
      events.root(event);
    }
    e.root_delivered(root);
  }
}

}  // namespace rayorch::detail
