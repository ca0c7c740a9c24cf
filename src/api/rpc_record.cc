// Definitions of rayorch/metrics.h: the printed form of an RPC record.
#include <fmt/format.h>

#include "rayorch/metrics.h"

namespace rayorch {

std::string RpcRecord::to_string() const {
  std::string keys;
  for (const auto& g : grains) keys += (keys.empty() ? "" : " ") + g;
  bool uniform = true;
  for (auto g : generations) uniform = uniform && g == generations.front();
  std::string gens;
  if (uniform && !generations.empty()) {
    gens = fmt::format("g{}", generations.front());
  } else {
    for (auto g : generations) gens += fmt::format("{}g{}", gens.empty() ? "" : ",", g);
  }
  return fmt::format("{} [{}] {}{}", call, keys, gens, failed ? " failed" : "");
}

}  // namespace rayorch
