// See failure_groups.h.
#include "execution/report/failure_groups.h"

#include <algorithm>

namespace rayorch::detail {

void add_failure(std::vector<ReportFailureGroup>& groups, std::string_view call,
                 std::string_view outcome, std::string_view cause, std::string_view entity,
                 std::uint64_t row) {
  // A cause's first line names what went wrong; later lines (a traceback) differ per parent.
  std::string_view head = cause.substr(0, cause.find('\n'));
  std::string key(head.substr(0, kMaxCauseChars));
  if (head.size() > kMaxCauseChars) key += "...";
  auto it = std::find_if(groups.begin(), groups.end(), [&](const ReportFailureGroup& g) {
    return g.call == call && g.outcome == outcome && g.cause == key;
  });
  if (it == groups.end()) {
    if (groups.size() + 1 < kMaxFailureGroups) {
      groups.push_back({std::string(call), std::string(outcome), std::move(key), 0, {}});
    } else {
      if (groups.size() + 1 == kMaxFailureGroups) {
        groups.push_back({"", "", "(other causes)", 0, {}});
      }
    }
    it = groups.end() - 1;
  }
  it->roots += 1;
  if (it->examples.size() < kFailureExamples) it->examples.emplace_back(entity, row);
}

}  // namespace rayorch::detail
