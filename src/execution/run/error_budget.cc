// The run's error budget. See error_budget.h.
#include "execution/run/error_budget.h"

#include <fmt/format.h>

namespace rayorch::detail {

ErrorBudget::ErrorBudget(const RunOptions& options)
    : max_failed_roots_(options.max_failed_roots),
      max_failed_fraction_(options.max_failed_fraction),
      min_roots_for_fraction_(options.min_roots_for_failed_fraction) {}

void ErrorBudget::count_failed(std::size_t caller_row, std::span<const ErasedOutput> outputs,
                               std::size_t delivered) {
  ++failed_;
  if (first_causes_.size() < 3) {
    for (const ErasedOutput& o : outputs) {
      if (o.outcome == Outcome::present) continue;
      first_causes_.push_back(
          fmt::format("row {}: {}{}{}", caller_row, to_string(o.outcome),
                      o.origin ? " at " + o.origin->call : "",
                      o.cause && !o.cause->empty() ? ": " + *o.cause : std::string()));
      break;
    }
  }
  if (exceeded()) return;
  const bool over_count = max_failed_roots_ && failed_ > *max_failed_roots_;
  const bool over_fraction =
      max_failed_fraction_ < 1.0 && delivered >= min_roots_for_fraction_ &&
      static_cast<double>(failed_) > max_failed_fraction_ * static_cast<double>(delivered);
  if (!over_count && !over_fraction) return;
  std::string causes;
  for (const std::string& c : first_causes_) causes += "\n  " + c;
  error_ = fmt::format(
      "error budget exceeded: {} of {} delivered roots failed or were suppressed (limit: {}); "
      "no further Grain was dispatched and the run stopped there. First causes:{}",
      failed_, delivered,
      over_count ? fmt::format("RunOptions.max_failed_roots = {}", *max_failed_roots_)
                 : fmt::format("RunOptions.max_failed_fraction = {} after {} roots",
                               max_failed_fraction_, min_roots_for_fraction_),
      causes);
}

}  // namespace rayorch::detail
