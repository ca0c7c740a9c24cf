// Outputs below the root (outputs_below_root_state.h): a Port of a child Domain that is a
// pipeline output. A root finishes once its root-Domain outputs are terminal and nothing below
// it that such an output waits for is unresolved: every expansion on the way down, and every
// Item of the output Port.
#include <algorithm>

#include "runtime/engine.h"

namespace rayorch::detail {

void Engine::init_outputs_below_root() {
  const std::size_t nd = p_.domains.size();
  below_.listings.assign(nd, 0);
  below_.expands_toward.assign(nd, {});
  below_.paths.assign(p_.outputs.size(), {});
  std::vector<std::uint8_t> toward(nd, 0);  // Domains on the way to an output below the root
  for (std::size_t k = 0; k < p_.outputs.size(); ++k) {
    int d = p_.ports[p_.outputs[k]].domain;
    if (d == 0) {
      ++below_.root_listings;
      continue;
    }
    below_.any = true;
    ++below_.listings[d];
    for (; d > 0; d = p_.domains[d].parent) {
      below_.paths[k].push_back(d);
      toward[d] = 1;
    }
    std::reverse(below_.paths[k].begin(), below_.paths[k].end());
  }
  for (std::size_t d = 1; d < nd; ++d) {
    if (toward[d] != 0) below_.expands_toward[p_.domains[d].parent].push_back(p_.domains[d].expand);
  }
  if (below_.any) below_.pending.assign(rows_, 0);
}

void Engine::below_root_created(int domain, std::uint32_t first, std::uint32_t count,
                                std::uint32_t parent) {
  const auto per =
      static_cast<std::uint32_t>(below_.expands_toward[domain].size()) + below_.listings[domain];
  if (per == 0) return;
  if (domain == 0) {
    for (std::uint32_t r = first; r < first + count; ++r) below_.pending[r] += per;
    return;
  }
  below_.pending[root_of(p_.domains[domain].parent, parent)] += per * count;
}

void Engine::below_root_expanded(int expand, std::uint32_t parent) {
  const int from = p_.expands[expand].parent_domain;
  const auto& toward = below_.expands_toward[from];
  if (std::find(toward.begin(), toward.end(), expand) == toward.end()) return;
  const std::uint32_t root = root_of(from, parent);
  --below_.pending[root];
  maybe_finish_root(root);
}

void Engine::below_root_output(int port, std::uint32_t entity) {
  const int domain = p_.ports[port].domain;
  const std::uint32_t root = root_of(domain, entity);
  for (int out : p_.outputs) {
    if (out == port) --below_.pending[root];
  }
  maybe_finish_root(root);
}

void Engine::root_output_resolved(std::uint32_t root) {
  ++root_outputs_resolved_[root];
  maybe_finish_root(root);
}

void Engine::maybe_finish_root(std::uint32_t root) {
  // Each of the two conditions becomes true once, so the root is finished once.
  if (root_outputs_resolved_[root] != below_.root_listings) return;
  if (below_.any && below_.pending[root] != 0) return;
  finished_roots_.push_back(root);
  ++roots_finished_;
}

void Engine::output_entities(std::uint32_t root, std::size_t k,
                             std::vector<std::uint32_t>& out) const {
  out.assign(1, root);
  std::vector<std::uint32_t> next;
  for (int d : below_.paths[k]) {
    next.clear();
    for (std::uint32_t e : out) {
      const Expansion& x = expand_.expansions[d][e];
      if (x.state != 1) continue;  // dropped or failed: no children
      for (std::uint32_t i = 0; i < x.count; ++i) next.push_back(x.first + i);
    }
    out.swap(next);
  }
}

}  // namespace rayorch::detail
