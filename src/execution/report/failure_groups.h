// Failed parents grouped the way a reader triages them: by the Call that decided the
// failure, the outcome and the cause, with a few example Entity keys to look up. Kept by the
// JSON report and the live page from RootEvents; drawn by the page.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rayorch::detail {

struct ReportFailureGroup {
  std::string call;  ///< the deciding Call ("OcrPage#2"); empty when none was recorded
  std::string outcome;
  std::string cause;        ///< the cause's first line, cut to kMaxCauseChars
  std::uint64_t roots = 0;  ///< parents in the group
  /// Up to kFailureExamples (Entity key, row) of its parents, the first delivered first.
  std::vector<std::pair<std::string, std::uint64_t>> examples;
};

inline constexpr std::size_t kFailureExamples = 3;
inline constexpr std::size_t kMaxCauseChars = 200;
/// Groups kept; the parents of any other group count in the last one ("other causes").
inline constexpr std::size_t kMaxFailureGroups = 50;

/// Adds one parent that is not present to `groups` (in first-seen order).
void add_failure(std::vector<ReportFailureGroup>& groups, std::string_view call,
                 std::string_view outcome, std::string_view cause, std::string_view entity,
                 std::uint64_t row);

}  // namespace rayorch::detail
