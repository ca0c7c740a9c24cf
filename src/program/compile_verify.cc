// Compiler phase: verify the logical program and assign every Port its Domain (DESIGN 4).
// Each broken rule is a CompileError naming the Ports involved and how to fix it.
#include <string>

#include <fmt/format.h>

#include "rayorch/errors.h"

#include "program/compiler.h"

namespace rayorch::detail {

namespace {

// The closest Domain that is `a` or an ancestor of it and also `b` or an ancestor of it.
int common_ancestor(const DomainAssignment& tree, int a, int b) {
  while (!tree.is_ancestor_or_self(a, b)) a = tree.domains[a].parent;
  return a;
}

// F::broadcast only moves a value down a Domain's ancestry, so values of two sibling Domains
// can only meet after one side is gathered up to an ancestor both share.
std::string siblings_hint(const DomainAssignment& tree, int a, int b, const char* gather) {
  const int common = common_ancestor(tree, a, b);
  return fmt::format(
      "d{} and d{} are siblings (neither is an ancestor of the other; both descend from d{}), "
      "so F::broadcast cannot bring one into the other: {} up to d{} with F::reduce first, "
      "then F::broadcast the result into the other Domain",
      a, b, common, gather, common);
}

void check_module_options(const Graph::Impl& g, int module) {
  const ModuleRecord& m = g.modules[module].record;
  std::string users;
  for (std::size_t c = 0; c < g.calls.size(); ++c) {
    if (g.calls[c].module == module) {
      users += (users.empty() ? "" : ", ") + call_name(g, static_cast<int>(c));
    }
  }
  auto fail = [&](const std::string& what) {
    throw CompileError(fmt::format("Module<{}> (used by {}): {}", m.udf_name, users, what));
  };
  const ModuleOptions& o = m.options;
  if (sizes_itself(o)) {
    if (o.min_replicas < 0) fail(fmt::format("min_replicas must be >= 0, got {}", o.min_replicas));
    if (o.max_replicas < 0)
      fail(fmt::format("max_replicas must be >= 1 (or 0 for the machine's CPU count), got {}",
                       o.max_replicas));
    if (o.max_replicas > 0 && o.min_replicas > o.max_replicas) {
      fail(fmt::format("min_replicas ({}) is above max_replicas ({})", o.min_replicas,
                       o.max_replicas));
    }
  } else if (o.replicas < 1) {
    fail(fmt::format("replicas must be >= 1, got {}", o.replicas));
  } else if (o.min_replicas != 0 || o.max_replicas != 0) {
    fail(fmt::format(
        "min_replicas/max_replicas apply to a self-sizing pool only, but replicas is fixed at "
        "{}: use auto replicas or drop them",
        o.replicas));
  }
  if (o.batch_size < 1) fail(fmt::format("batch_size must be >= 1, got {}", o.batch_size));
  if (!(o.cpus >= 0)) fail(fmt::format("cpus must be >= 0, got {}", o.cpus));
  if (!(o.gpus >= 0)) fail(fmt::format("gpus must be >= 0, got {}", o.gpus));
  for (const auto& [name, amount] : o.resources) {
    if (name.empty()) fail("a named resource has an empty name");
    if (!(amount >= 0)) fail(fmt::format("resource '{}' must be >= 0, got {}", name, amount));
  }
  if (o.infra_retries < 0) fail(fmt::format("infra_retries must be >= 0, got {}", o.infra_retries));
  if (o.recovery.retries() < 0) {
    fail(fmt::format("recovery retries must be >= 0, got {}", o.recovery.retries()));
  }
  if (o.timeout.count() < 0)
    fail(fmt::format("timeout must be >= 0 ms, got {}", o.timeout.count()));
  if (o.batch_wait.count() < 0)
    fail(fmt::format("batch_wait must be >= 0 ms, got {}", o.batch_wait.count()));
  if (o.memory_limit > 0 && o.isolation != Isolation::process) {
    fail(
        "memory_limit applies to process-isolated workers only: add "
        ".isolation(ro::Isolation::process) or drop the limit");
  }
  if (o.isolation == Isolation::process) {
    for (const LogicalCall& c : g.calls) {
      if (c.module != module || c.record.codecs.available) continue;
      fail(fmt::format(
          "runs in worker processes (Isolation::process), so its values cross a process "
          "boundary, but type {} has no codec: specialise rayorch::Codec<{}> (see "
          "rayorch/codec.h)",
          c.record.codecs.missing, c.record.codecs.missing));
    }
  }
  if (!m.factory) fail("has no constructor factory");
}

}  // namespace

DomainAssignment verify(const Graph& graph) {
  const Graph::Impl& g = graph.impl();
  auto port = [&graph](int p) { return graph.describe(p); };
  if (g.outputs.empty()) {
    throw CompileError("the pipeline has no outputs: forward() must return at least one Port");
  }
  for (std::size_t m = 0; m < g.modules.size(); ++m) check_module_options(g, static_cast<int>(m));
  verify_colocation(g);

  DomainAssignment tree;
  tree.domains.push_back(PlanDomain{});
  std::vector<int>& domain = tree.port_domain;
  domain.assign(g.ports.size(), -1);
  std::vector<int> expanded_by(g.ports.size(), -1);
  // Ports are created after their inputs, so id order is a topological order.
  for (std::size_t id = 0; id < g.ports.size(); ++id) {
    const int p = static_cast<int>(id);
    const LogicalPort& lp = g.ports[id];
    switch (lp.kind) {
      case PortKind::source:
        domain[id] = 0;
        break;
      case PortKind::call_output: {
        const LogicalCall& c = g.calls[lp.op];
        if (c.record.inputs.empty()) {
          throw CompileError(fmt::format("Call {} has no Port input; pass at least one Port",
                                         call_name(g, lp.op)));
        }
        int d = domain[c.record.inputs[0]];
        for (int in : c.record.inputs) {
          if (domain[in] != d) {
            const int e = domain[in];
            const bool related = tree.is_ancestor_or_self(d, e) || tree.is_ancestor_or_self(e, d);
            throw CompileError(fmt::format(
                "Call {} takes inputs from different Domains: {} is in d{} but {} is in d{}; {}",
                call_name(g, lp.op), port(c.record.inputs[0]), d, port(in), e,
                related ? std::string("bring the ancestor value down with "
                                      "F::broadcast(value, like) first")
                        : siblings_hint(tree, d, e,
                                        "gather one side (a UDF can turn its Group "
                                        "into one value)")));
          }
        }
        domain[id] = d;
        break;
      }
      case PortKind::expand: {
        const LogicalExpand& e = g.expands[lp.op];
        if (lp.slot == 0) {
          // Before the expanded-twice check, which would misreport a repeated list.
          for (std::size_t i = 0; i < e.lists.size(); ++i) {
            for (std::size_t j = i + 1; j < e.lists.size(); ++j) {
              if (e.lists[i] == e.lists[j]) {
                throw CompileError(fmt::format(
                    "F::expand_aligned lists {} twice; pass distinct Ports", port(e.lists[i])));
              }
            }
          }
          int producer_call = -1;
          for (int l : e.lists) {
            const LogicalPort& src = g.ports[l];
            if (!port_kind_info(src.kind).worker_output) {
              throw CompileError(fmt::format(
                  "F::expand of {}: only a Call output can be expanded; produce the list with "
                  "a UDF",
                  port(l)));
            }
            if (producer_call >= 0 && src.op != producer_call) {
              throw CompileError(fmt::format(
                  "F::expand_aligned over {} and {}: aligned lists must be outputs of the same "
                  "Call; expand them separately or return them from one UDF",
                  port(e.lists[0]), port(l)));
            }
            producer_call = src.op;
            if (expanded_by[l] >= 0) {
              throw CompileError(fmt::format(
                  "{} is expanded twice (by p{} and p{}); expand it once and reuse the child "
                  "Port",
                  port(l), expanded_by[l], p));
            }
            expanded_by[l] = p;
          }
          PlanDomain child;
          child.parent = domain[e.lists[0]];
          child.depth = tree.domains[child.parent].depth + 1;
          child.expand = lp.op;
          tree.domains.push_back(child);
          tree.expand_domain.push_back(static_cast<int>(tree.domains.size()) - 1);
        }
        domain[id] = tree.expand_domain[lp.op];
        break;
      }
      case PortKind::reduce: {
        const LogicalReduce& r = g.reduces[lp.op];
        int d = domain[r.values[0]];
        if (d == 0) {
          throw CompileError(fmt::format(
              "F::reduce of {}: it lives in the root Domain d0, which has no parent to gather "
              "into; reduce only Ports inside an expansion (F::expand)",
              port(r.values[0])));
        }
        for (int v : r.values) {
          if (domain[v] != d) {
            throw CompileError(fmt::format(
                "F::reduce_aligned over {} (d{}) and {} (d{}): aligned Ports must share one "
                "expansion; reduce them separately",
                port(r.values[0]), d, port(v), domain[v]));
          }
        }
        if (r.members >= 0 && domain[r.members] != d) {
          throw CompileError(fmt::format(
              "reduce members {} is in d{} but the values ({}) are in d{}; members must share "
              "the values' child Domain",
              port(r.members), domain[r.members], port(r.values[0]), d));
        }
        domain[id] = tree.domains[d].parent;
        break;
      }
      case PortKind::filter: {
        const LogicalFilter& f = g.filters[lp.op];
        const int ds = domain[f.source];
        const int dm = domain[f.mask];
        if (ds != dm) {
          std::string hint;
          if (tree.is_ancestor_or_self(dm, ds)) {
            hint = "broadcast the mask with F::broadcast(mask, like) first";
          } else if (tree.is_ancestor_or_self(ds, dm)) {
            hint = fmt::format(
                "the mask lives below the source: F::broadcast the source into d{} and filter "
                "there, or gather the mask up to d{} with F::reduce and turn each Group into "
                "one bool with a UDF",
                dm, ds);
          } else {
            hint = siblings_hint(tree, dm, ds,
                                 "gather the mask (and turn each Group into one bool with a UDF)");
          }
          throw CompileError(fmt::format(
              "F::filter of {} (d{}) by mask {} (d{}): source and mask must be in the same "
              "Domain; {}",
              port(f.source), ds, port(f.mask), dm, hint));
        }
        domain[id] = domain[f.source];
        break;
      }
      case PortKind::broadcast: {
        const LogicalBroadcast& b = g.broadcasts[lp.op];
        const int from = domain[b.source];
        const int to = domain[b.like];
        if (from == to) {
          throw CompileError(fmt::format(
              "F::broadcast of {} like {}: both are already in d{}; use the Port directly",
              port(b.source), port(b.like), from));
        }
        if (!tree.is_ancestor_or_self(from, to) && !tree.is_ancestor_or_self(to, from)) {
          throw CompileError(fmt::format(
              "F::broadcast of {} (d{}) like {} (d{}): d{} is not an ancestor of d{}; only an "
              "ancestor value can be broadcast into a descendant Domain, and {}",
              port(b.source), from, port(b.like), to, from, to,
              siblings_hint(tree, from, to, "gather the source")));
        }
        if (!tree.is_ancestor_or_self(from, to)) {
          throw CompileError(fmt::format(
              "F::broadcast of {} (d{}) like {} (d{}): d{} is not an ancestor of d{}; only "
              "an ancestor value can be broadcast into a descendant Domain (use F::reduce to "
              "go up)",
              port(b.source), from, port(b.like), to, from, to));
        }
        domain[id] = to;
        break;
      }
    }
  }
  for (int output : g.outputs) {
    if (domain[output] != 0 && !g.outputs_below_root) {
      throw CompileError(fmt::format(
          "pipeline output {} lives in d{}, not the root Domain; gather it with F::reduce "
          "until it is one value per source row",
          port(output), domain[output]));
    }
  }
  return tree;
}

}  // namespace rayorch::detail
