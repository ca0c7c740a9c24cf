// The run's error budget (RunOptions::max_failed_roots / max_failed_fraction): once more
// roots failed or were suppressed than it allows, nothing more is admitted or dispatched
// and the run ends at once with an error naming the first causes.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rayorch/executor.h"

namespace rayorch::detail {

class ErrorBudget {
 public:
  explicit ErrorBudget(const RunOptions& options);

  /// Counts a failed or suppressed root (`outputs` as delivered, `caller_row` as the caller
  /// numbers it) after `delivered` roots were delivered, this one included.
  void count_failed(std::size_t caller_row, std::span<const ErasedOutput> outputs,
                    std::size_t delivered);
  /// The budget is spent: set once, never cleared.
  bool exceeded() const { return !error_.empty(); }
  /// The message the run ends with once exceeded().
  const std::string& error() const { return error_; }

 private:
  std::optional<std::size_t> max_failed_roots_;
  double max_failed_fraction_;
  std::size_t min_roots_for_fraction_;
  std::size_t failed_ = 0;
  std::vector<std::string> first_causes_;  // the first three, for the message
  std::string error_;
};

}  // namespace rayorch::detail
