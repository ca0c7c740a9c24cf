// Shared by the end-to-end runtime scenarios (tests/runtime/scenarios_*_test.cc): a run's
// RPC log as text, the position of an RPC in it, and an output's outcome and cause as text.
#pragma once

#include <string>
#include <vector>

#include <rayorch/rayorch.h>

namespace runtime_test {

namespace ro = rayorch;

namespace scenario_checks {

inline std::vector<std::string> log_of(const std::vector<ro::RpcRecord>& rpcs) {
  std::vector<std::string> out;
  for (const auto& r : rpcs) out.push_back(r.to_string());
  return out;
}

// Position of the first RPC whose text starts with `prefix`, or -1.
inline long position(const std::vector<std::string>& log, const std::string& prefix) {
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (log[i].rfind(prefix, 0) == 0) return static_cast<long>(i);
  }
  return -1;
}

template <class T>
std::string issue_of(const ro::Output<T>& o) {
  if (o.ok()) return "present";
  return std::string(ro::to_string(o.issue().outcome)) +
         (o.issue().cause.empty() ? "" : "(" + o.issue().cause + ")");
}

}  // namespace scenario_checks

}  // namespace runtime_test
