// Compiler phase: which Modules share one pool (DESIGN 5.12). The declared colocate groups,
// and with CompileOptions::auto_colocate the chains the compiler finds: a Module whose every
// output is read only by Calls of one other Module, so that on a backend whose actors keep
// values (Ray) those values never leave the actor that made them.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "program/compiler.h"

namespace rayorch::detail {

namespace {

// Who reads a Port, as far as co-location cares.
constexpr int kUnread = -2;  // nothing reads it (yet)
constexpr int kShared = -1;  // read by an operation other than a Call, by the pipeline's
                             // outputs, or by Calls of more than one Module

// Per Port: the one Module whose Calls alone read it, or kUnread / kShared. An expand,
// reduce, filter or broadcast reading a value makes the driver need it, as a pipeline output
// does, so such a value would leave the actor anyway.
std::vector<int> sole_reader_modules(const Graph::Impl& g) {
  std::vector<int> reader(g.ports.size(), kUnread);
  const auto read_by = [&](int port, int module) {
    int& r = reader[static_cast<std::size_t>(port)];
    r = (r == kUnread || r == module) ? module : kShared;
  };
  const auto shared = [&](int port) { reader[static_cast<std::size_t>(port)] = kShared; };
  for (const LogicalCall& call : g.calls)
    for (int in : call.record.inputs) read_by(in, call.module);
  for (const LogicalExpand& e : g.expands)
    for (int in : e.lists) shared(in);
  for (const LogicalReduce& r : g.reduces) {
    for (int in : r.values) shared(in);
    if (r.members >= 0) shared(r.members);
  }
  for (const LogicalFilter& f : g.filters) {
    shared(f.source);
    shared(f.mask);
  }
  for (const LogicalBroadcast& b : g.broadcasts) {
    shared(b.source);
    shared(b.like);
  }
  for (int out : g.outputs) shared(out);
  return reader;
}

// The Module that alone reads every output of `module`'s Calls, or -1: none, several, or an
// operation other than a Call among the readers.
int next_module(const Graph::Impl& g, const std::vector<int>& reader, int module) {
  int next = kUnread;
  for (const LogicalCall& call : g.calls) {
    if (call.module != module) continue;
    for (int out : call.outputs) {
      const int r = reader[static_cast<std::size_t>(out)];
      if (r == kUnread) continue;
      if (r == kShared || r == module || (next != kUnread && next != r)) return -1;
      next = r;
    }
  }
  return next == kUnread ? -1 : next;
}

bool may_share_a_pool(const ModuleRecord& a, const ModuleRecord& b) {
  return a.options.colocate.empty() && b.options.colocate.empty() &&
         pool_option_values(a.options) == pool_option_values(b.options) &&
         a.host_options == b.host_options;
}

// Union-find whose representative is the smallest Module index of each set.
int find(std::vector<int>& lead, int m) {
  while (lead[static_cast<std::size_t>(m)] != m) {
    int& up = lead[static_cast<std::size_t>(m)];
    up = lead[static_cast<std::size_t>(up)];
    m = up;
  }
  return m;
}

}  // namespace

Colocation colocate(const Graph::Impl& g, const CompileOptions& options) {
  const std::size_t n = g.modules.size();
  Colocation out;
  out.lead.resize(n);
  std::iota(out.lead.begin(), out.lead.end(), 0);
  out.found.assign(n, false);
  // Declared groups: every member joins the group's first Module.
  for (std::size_t m = 0; m < n; ++m) {
    const std::string& group = g.modules[m].record.options.colocate;
    if (group.empty()) continue;
    for (std::size_t k = 0; k < m; ++k) {
      if (g.modules[k].record.options.colocate != group) continue;
      out.lead[m] = static_cast<int>(k);
      break;
    }
  }
  if (!options.auto_colocate) return out;
  const std::vector<int> reader = sole_reader_modules(g);
  std::vector<int> sets(out.lead);
  for (std::size_t m = 0; m < n; ++m) {
    const int next = next_module(g, reader, static_cast<int>(m));
    if (next < 0 || !may_share_a_pool(g.modules[m].record, g.modules[next].record)) continue;
    const int a = find(sets, static_cast<int>(m));
    const int b = find(sets, next);
    sets[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
    out.found[m] = out.found[static_cast<std::size_t>(next)] = true;
  }
  for (std::size_t m = 0; m < n; ++m) {
    if (out.found[m]) out.lead[m] = find(sets, static_cast<int>(m));
  }
  return out;
}

}  // namespace rayorch::detail
