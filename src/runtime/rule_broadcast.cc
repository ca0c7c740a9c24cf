// Structural rule: broadcast. Copies an ancestor Item to every descendant Entity of the
// target Domain, as expansions resolve (DESIGN 5).
#include <algorithm>

#include "runtime/engine.h"

namespace rayorch::detail {

void Engine::publish_broadcast_range(int broadcast, int domain, std::uint32_t first,
                                     std::uint32_t count) {
  if (count == 0) return;  // an empty Expansion has no child to read the parent from
  const PlanBroadcast& pb = p_.broadcasts[broadcast];
  // `first` is an Entity of `domain`; ancestor_in walks up from there.
  const std::uint32_t a = ancestor_in(domain, first, pb.source_domain);
  const Item src = items_[pb.source][a];
  for (std::uint32_t k = 0; k < count; ++k) {
    publish(pb.output, first + k, src.state, src.block, src.row, src.cause, src.flags & kTruth);
  }
}

void Engine::on_broadcast_source(int broadcast, std::uint32_t ancestor) {
  const PlanBroadcast& pb = p_.broadcasts[broadcast];
  // The Domain path from the source Domain down to the target Domain.
  std::vector<int> path;
  for (int d = pb.target_domain; d != pb.source_domain; d = p_.domains[d].parent) path.push_back(d);
  std::reverse(path.begin(), path.end());
  // Iterative walk over Expansion facts; memory O(depth).
  struct Frame {
    std::uint32_t next;
    std::uint32_t end;
  };
  std::vector<Frame> stack;
  stack.reserve(path.size());
  auto push_children = [&](std::size_t level, std::uint32_t entity) {
    const Expansion& x = expand_.expansions[path[level]][entity];
    if (x.state == 1)
      stack.push_back(Frame{x.first, x.first + x.count});
    else
      stack.push_back(Frame{0, 0});
  };
  push_children(0, ancestor);
  while (!stack.empty()) {
    const std::size_t level = stack.size() - 1;
    Frame& f = stack.back();
    if (level + 1 == path.size()) {
      if (f.end > f.next) publish_broadcast_range(broadcast, path[level], f.next, f.end - f.next);
      stack.pop_back();
      continue;
    }
    if (f.next == f.end) {
      stack.pop_back();
      continue;
    }
    const std::uint32_t e = f.next++;
    push_children(level + 1, e);
  }
}

}  // namespace rayorch::detail
