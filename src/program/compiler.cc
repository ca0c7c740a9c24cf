// The compiler: verify the logical program, analyse it, canonicalise broadcast chains,
// lower it to an immutable RuntimePlan and verify the plan.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "rayorch/errors.h"
#include "rayorch/program.h"

#include "program/logical.h"
#include "program/plan.h"
#include "program/plan_code.h"

namespace rayorch::detail {
namespace {

std::string call_name(const Graph::Impl& g, int call) {
  return fmt::format("{}#{}", g.modules[g.calls[call].module].record.udf_name, call);
}

// The closest Domain that is `a` or an ancestor of it and also `b` or an ancestor of it.
int common_ancestor(const RuntimePlan& plan, int a, int b) {
  while (!plan.is_ancestor_or_self(a, b)) a = plan.domains[a].parent;
  return a;
}

// F::broadcast only moves a value down a Domain's ancestry, so values of two sibling Domains
// can only meet after one side is gathered up to an ancestor both share.
std::string siblings_hint(const RuntimePlan& plan, int a, int b, const char* gather) {
  const int common = common_ancestor(plan, a, b);
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
  if (o.replicas < 1) fail(fmt::format("replicas must be >= 1, got {}", o.replicas));
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
  if (!m.factory) fail("has no constructor factory");
}

class Compiler {
 public:
  Compiler(const Graph& graph, const CompileOptions& options)
      : graph_(graph), g_(graph.impl()), options_(options) {}

  std::shared_ptr<const RuntimePlan> run() {
    auto plan = std::make_shared<RuntimePlan>();
    plan->optimized = options_.optimize;
    verify_and_assign_domains(*plan);
    canonicalise(*plan);
    lower(*plan);
    verify_plan(*plan);
    return plan;
  }

 private:
  std::string port(int p) const { return graph_.describe(p); }

  void verify_and_assign_domains(RuntimePlan& plan) {
    if (g_.outputs.empty()) {
      throw CompileError("the pipeline has no outputs: forward() must return at least one Port");
    }
    for (std::size_t m = 0; m < g_.modules.size(); ++m)
      check_module_options(g_, static_cast<int>(m));

    plan.domains.push_back(PlanDomain{});
    domain_.assign(g_.ports.size(), -1);
    std::vector<int> expanded_by(g_.ports.size(), -1);
    // Ports are created after their inputs, so id order is a topological order.
    for (std::size_t id = 0; id < g_.ports.size(); ++id) {
      const int p = static_cast<int>(id);
      const LogicalPort& lp = g_.ports[id];
      switch (lp.kind) {
        case PortKind::source:
          domain_[id] = 0;
          break;
        case PortKind::call_output: {
          const LogicalCall& c = g_.calls[lp.op];
          if (c.record.inputs.empty()) {
            throw CompileError(fmt::format("Call {} has no Port input; pass at least one Port",
                                           call_name(g_, lp.op)));
          }
          int d = domain_[c.record.inputs[0]];
          for (int in : c.record.inputs) {
            if (domain_[in] != d) {
              const int e = domain_[in];
              const bool related = plan.is_ancestor_or_self(d, e) || plan.is_ancestor_or_self(e, d);
              throw CompileError(fmt::format(
                  "Call {} takes inputs from different Domains: {} is in d{} but {} is in d{}; {}",
                  call_name(g_, lp.op), port(c.record.inputs[0]), d, port(in), e,
                  related ? std::string("bring the ancestor value down with "
                                        "F::broadcast(value, like) first")
                          : siblings_hint(plan, d, e,
                                          "gather one side (a UDF can turn its Group "
                                          "into one value)")));
            }
          }
          domain_[id] = d;
          break;
        }
        case PortKind::expand: {
          const LogicalExpand& e = g_.expands[lp.op];
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
              const LogicalPort& src = g_.ports[l];
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
            child.parent = domain_[e.lists[0]];
            child.depth = plan.domains[child.parent].depth + 1;
            child.expand = lp.op;
            plan.domains.push_back(child);
            expand_domain_.push_back(static_cast<int>(plan.domains.size()) - 1);
          }
          domain_[id] = expand_domain_[lp.op];
          break;
        }
        case PortKind::reduce: {
          const LogicalReduce& r = g_.reduces[lp.op];
          int d = domain_[r.values[0]];
          if (d == 0) {
            throw CompileError(fmt::format(
                "F::reduce of {}: it lives in the root Domain d0, which has no parent to gather "
                "into; reduce only Ports inside an expansion (F::expand)",
                port(r.values[0])));
          }
          for (int v : r.values) {
            if (domain_[v] != d) {
              throw CompileError(fmt::format(
                  "F::reduce_aligned over {} (d{}) and {} (d{}): aligned Ports must share one "
                  "expansion; reduce them separately",
                  port(r.values[0]), d, port(v), domain_[v]));
            }
          }
          if (r.members >= 0 && domain_[r.members] != d) {
            throw CompileError(fmt::format(
                "reduce members {} is in d{} but the values ({}) are in d{}; members must share "
                "the values' child Domain",
                port(r.members), domain_[r.members], port(r.values[0]), d));
          }
          domain_[id] = plan.domains[d].parent;
          break;
        }
        case PortKind::filter: {
          const LogicalFilter& f = g_.filters[lp.op];
          const int ds = domain_[f.source];
          const int dm = domain_[f.mask];
          if (ds != dm) {
            std::string hint;
            if (plan.is_ancestor_or_self(dm, ds)) {
              hint = "broadcast the mask with F::broadcast(mask, like) first";
            } else if (plan.is_ancestor_or_self(ds, dm)) {
              hint = fmt::format(
                  "the mask lives below the source: F::broadcast the source into d{} and filter "
                  "there, or gather the mask up to d{} with F::reduce and turn each Group into "
                  "one bool with a UDF",
                  dm, ds);
            } else {
              hint = siblings_hint(
                  plan, dm, ds, "gather the mask (and turn each Group into one bool with a UDF)");
            }
            throw CompileError(fmt::format(
                "F::filter of {} (d{}) by mask {} (d{}): source and mask must be in the same "
                "Domain; {}",
                port(f.source), ds, port(f.mask), dm, hint));
          }
          domain_[id] = domain_[f.source];
          break;
        }
        case PortKind::broadcast: {
          const LogicalBroadcast& b = g_.broadcasts[lp.op];
          const int from = domain_[b.source];
          const int to = domain_[b.like];
          if (from == to) {
            throw CompileError(fmt::format(
                "F::broadcast of {} like {}: both are already in d{}; use the Port directly",
                port(b.source), port(b.like), from));
          }
          if (!plan.is_ancestor_or_self(from, to) && !plan.is_ancestor_or_self(to, from)) {
            throw CompileError(fmt::format(
                "F::broadcast of {} (d{}) like {} (d{}): d{} is not an ancestor of d{}; only an "
                "ancestor value can be broadcast into a descendant Domain, and {}",
                port(b.source), from, port(b.like), to, from, to,
                siblings_hint(plan, from, to, "gather the source")));
          }
          if (!plan.is_ancestor_or_self(from, to)) {
            throw CompileError(fmt::format(
                "F::broadcast of {} (d{}) like {} (d{}): d{} is not an ancestor of d{}; only "
                "an ancestor value can be broadcast into a descendant Domain (use F::reduce to "
                "go up)",
                port(b.source), from, port(b.like), to, from, to));
          }
          domain_[id] = to;
          break;
        }
      }
    }
    std::set<int> seen;
    for (int out : g_.outputs) {
      if (domain_[out] != 0) {
        throw CompileError(fmt::format(
            "pipeline output {} lives in d{}, not the root Domain; gather it with F::reduce "
            "until it is one value per source row",
            port(out), domain_[out]));
      }
    }
  }

  // Collapses chains of broadcasts: each broadcast reads the first non-broadcast ancestor.
  void canonicalise(RuntimePlan& plan) {
    plan.rewrites.assign(g_.ports.size(), {});
    effective_source_.clear();
    for (const LogicalBroadcast& b : g_.broadcasts) {
      int s = b.source;
      if (options_.optimize) {
        while (g_.ports[s].kind == PortKind::broadcast) s = g_.broadcasts[g_.ports[s].op].source;
        if (s != b.source) {
          plan.rewrites[b.output].push_back(
              fmt::format("rewrite collapse-broadcast-chain: [p{}] -> [p{}]", b.source, s));
        }
      }
      effective_source_.push_back(s);
    }
  }

  void lower(RuntimePlan& plan) {
    PlanCode code;
    // Ports.
    plan.ports.resize(g_.ports.size());
    for (std::size_t id = 0; id < g_.ports.size(); ++id) {
      PlanPort& pp = plan.ports[id];
      const LogicalPort& lp = g_.ports[id];
      pp.kind = lp.kind;
      pp.domain = domain_[id];
      pp.type = lp.type;
      pp.op = lp.op;
      pp.slot = lp.slot;
      plan.domains[pp.domain].ports.push_back(static_cast<int>(id));
    }
    // Pools: one per Module identity, in order of first use.
    std::map<std::string, int> udf_count;
    for (const LogicalModule& m : g_.modules) ++udf_count[m.record.udf_name];
    std::map<std::string, int> udf_seen;
    for (const LogicalModule& m : g_.modules) {
      PlanPool pool;
      pool.udf = m.record.udf_name;
      int k = udf_seen[pool.udf]++;
      pool.name = udf_count[pool.udf] > 1 ? fmt::format("{}/{}", pool.udf, k) : pool.udf;
      pool.options = m.record.options;
      code.factories.push_back(m.record.factory);
      plan.pools.push_back(std::move(pool));
    }
    // Calls.
    for (std::size_t c = 0; c < g_.calls.size(); ++c) {
      const LogicalCall& lc = g_.calls[c];
      PlanCall pc;
      pc.name = call_name(g_, static_cast<int>(c));
      pc.udf = g_.modules[lc.module].record.udf_name;
      pc.pool = lc.module;
      pc.domain = domain_[lc.outputs.empty() ? lc.record.inputs[0] : lc.outputs[0]];
      pc.inputs = lc.record.inputs;
      pc.outputs = lc.outputs;
      code.invokers.push_back(lc.record.invoker);
      pc.static_args = lc.record.static_args;
      const int parent = plan.domains[pc.domain].parent;
      pc.barrier_domain = parent >= 0 ? parent : pc.domain;
      const ModuleOptions& o = g_.modules[lc.module].record.options;
      pc.batch_size = o.batch_size;
      pc.recovery = o.recovery;
      pc.infra_retries = o.infra_retries;
      for (std::size_t i = 0; i < pc.inputs.size(); ++i) {
        plan.ports[pc.inputs[i]].consumers.push_back(
            Consumer{ConsumerKind::call_input, static_cast<int>(c), static_cast<int>(i)});
      }
      for (int out : pc.outputs) plan.ports[out].inputs = pc.inputs;
      plan.domains[pc.domain].calls.push_back(static_cast<int>(c));
      plan.pools[lc.module].calls.push_back(static_cast<int>(c));
      plan.calls.push_back(std::move(pc));
    }
    // Expands.
    for (std::size_t e = 0; e < g_.expands.size(); ++e) {
      const LogicalExpand& le = g_.expands[e];
      PlanExpand pe;
      pe.call = g_.ports[le.lists[0]].op;
      pe.lists = le.lists;
      pe.children = le.children;
      code.list_ops.push_back(le.ops);
      pe.parent_domain = domain_[le.lists[0]];
      pe.child_domain = expand_domain_[e];
      for (std::size_t i = 0; i < pe.lists.size(); ++i) {
        plan.ports[pe.lists[i]].consumers.push_back(
            Consumer{ConsumerKind::expand_list, static_cast<int>(e), static_cast<int>(i)});
        plan.ports[pe.children[i]].inputs = {pe.lists[i]};
        plan.ports[pe.lists[i]].expanded_by = static_cast<int>(e);
      }
      plan.expands.push_back(std::move(pe));
    }
    // Reduces.
    for (std::size_t r = 0; r < g_.reduces.size(); ++r) {
      const LogicalReduce& lr = g_.reduces[r];
      PlanReduce pr;
      pr.values = lr.values;
      pr.members = lr.members >= 0 ? lr.members : lr.values[0];
      pr.members_is_value = pr.members == lr.values[0];
      pr.outputs = lr.outputs;
      code.makers.push_back(lr.makers);
      pr.child_domain = domain_[lr.values[0]];
      pr.parent_domain = plan.domains[pr.child_domain].parent;
      for (std::size_t i = 0; i < pr.values.size(); ++i) {
        plan.ports[pr.values[i]].consumers.push_back(
            Consumer{ConsumerKind::reduce_value, static_cast<int>(r), static_cast<int>(i)});
      }
      if (!pr.members_is_value) {
        plan.ports[pr.members].consumers.push_back(
            Consumer{ConsumerKind::reduce_member, static_cast<int>(r), 0});
      }
      for (std::size_t i = 0; i < pr.outputs.size(); ++i) {
        plan.ports[pr.outputs[i]].inputs = {pr.values[i]};
        if (lr.members >= 0) plan.ports[pr.outputs[i]].inputs.push_back(lr.members);
      }
      plan.domains[pr.child_domain].reduces_of_children.push_back(static_cast<int>(r));
      plan.reduces.push_back(std::move(pr));
    }
    // Filters.
    for (std::size_t f = 0; f < g_.filters.size(); ++f) {
      const LogicalFilter& lf = g_.filters[f];
      plan.filters.push_back(PlanFilter{lf.source, lf.mask, lf.output});
      plan.ports[lf.source].consumers.push_back(
          Consumer{ConsumerKind::filter_source, static_cast<int>(f), 0});
      plan.ports[lf.mask].consumers.push_back(
          Consumer{ConsumerKind::filter_mask, static_cast<int>(f), 1});
      plan.ports[lf.output].inputs = {lf.source, lf.mask};
    }
    // Broadcasts.
    for (std::size_t b = 0; b < g_.broadcasts.size(); ++b) {
      const LogicalBroadcast& lb = g_.broadcasts[b];
      PlanBroadcast pb;
      pb.source = effective_source_[b];
      pb.declared_source = lb.source;
      pb.output = lb.output;
      pb.source_domain = domain_[pb.source];
      pb.target_domain = domain_[lb.output];
      plan.ports[pb.source].consumers.push_back(
          Consumer{ConsumerKind::broadcast_source, static_cast<int>(b), 0});
      plan.ports[lb.output].inputs = {lb.source};
      plan.domains[pb.target_domain].broadcasts_into.push_back(static_cast<int>(b));
      plan.broadcasts.push_back(pb);
    }
    plan.sources = g_.sources;
    plan.outputs = g_.outputs;
    for (int out : plan.outputs) plan.ports[out].is_output = true;
    mark_truth_producers(plan);
    find_reduce_guards(plan);
    plan.code = std::make_shared<const PlanCode>(std::move(code));
  }

  // A mask's boolean travels with the reports (DESIGN 6.2), so the producer of every value
  // that reaches a mask (through filters and broadcasts, which pass values on unchanged)
  // must report it. A Port is created after its inputs, so one pass from the last Port down
  // reaches every producer.
  // The Calls of a reduce's child Domain that its values or membership depend on: walk up
  // through Calls, filters and broadcasts while staying in that Domain.
  static void find_reduce_guards(RuntimePlan& plan) {
    for (PlanReduce& r : plan.reduces) {
      std::vector<int> ports(r.values.begin(), r.values.end());
      ports.push_back(r.members);
      std::vector<char> seen(plan.ports.size(), 0);
      while (!ports.empty()) {
        const int p = ports.back();
        ports.pop_back();
        if (seen[p] || plan.ports[p].domain != r.child_domain) continue;
        seen[p] = 1;
        const PlanPort& pp = plan.ports[p];
        if (port_kind_info(pp.kind).worker_output) {
          const PlanCall& c = plan.calls[pp.op];
          if (std::find(r.guards.begin(), r.guards.end(), pp.op) == r.guards.end())
            r.guards.push_back(pp.op);
          ports.insert(ports.end(), c.inputs.begin(), c.inputs.end());
        } else if (pp.kind == PortKind::filter) {
          ports.push_back(plan.filters[pp.op].source);
          ports.push_back(plan.filters[pp.op].mask);
        } else if (pp.kind == PortKind::broadcast) {
          ports.push_back(plan.broadcasts[pp.op].source);
        }
      }
      std::sort(r.guards.begin(), r.guards.end());
    }
  }

  static void mark_truth_producers(RuntimePlan& plan) {
    for (const PlanFilter& f : plan.filters) plan.ports[f.mask].needs_truth = true;
    for (std::size_t id = plan.ports.size(); id-- > 0;) {
      const PlanPort& pp = plan.ports[id];
      if (!pp.needs_truth || !port_kind_info(pp.kind).forwards_value) continue;
      const int source =
          pp.kind == PortKind::filter ? plan.filters[pp.op].source : plan.broadcasts[pp.op].source;
      plan.ports[source].needs_truth = true;
    }
  }

  // Internal consistency of the lowered plan; a failure here is a compiler bug.
  void verify_plan(const RuntimePlan& plan) const {
    auto bug = [](const std::string& what) {
      throw CompileError("internal error while lowering the pipeline: " + what);
    };
    for (std::size_t p = 0; p < plan.ports.size(); ++p) {
      const PlanPort& pp = plan.ports[p];
      if (pp.domain < 0 || pp.domain >= static_cast<int>(plan.domains.size())) {
        bug(fmt::format("p{} has no Domain", p));
      }
      for (const Consumer& c : pp.consumers) {
        switch (c.kind) {
          case ConsumerKind::call_input:
            if (plan.calls[c.op].domain != pp.domain)
              bug(fmt::format("p{} feeds a Call across Domains", p));
            break;
          case ConsumerKind::broadcast_source:
            if (!plan.is_ancestor_or_self(pp.domain, plan.broadcasts[c.op].target_domain)) {
              bug(fmt::format("p{} broadcast to a non-descendant", p));
            }
            break;
          default:
            break;
        }
      }
    }
    for (const PlanExpand& e : plan.expands) {
      if (plan.domains[e.child_domain].parent != e.parent_domain)
        bug("expand Domains inconsistent");
    }
    for (const PlanReduce& r : plan.reduces) {
      if (plan.domains[r.child_domain].parent != r.parent_domain)
        bug("reduce Domains inconsistent");
    }
  }

  const Graph& graph_;
  const Graph::Impl& g_;
  CompileOptions options_;
  std::vector<int> domain_;
  std::vector<int> expand_domain_;
  std::vector<int> effective_source_;
};

}  // namespace

std::shared_ptr<const RuntimePlan> compile_graph(Graph& graph, const CompileOptions& options) {
  return Compiler(graph, options).run();
}

std::string explain_plan(const RuntimePlan& plan) {
  std::string out = fmt::format("RuntimePlan[{}]\n", plan.optimized ? "optimized" : "unoptimized");
  for (std::size_t p = 0; p < plan.ports.size(); ++p) {
    const PlanPort& pp = plan.ports[p];
    std::string inputs;
    for (int in : pp.inputs) inputs += fmt::format("{}p{}", inputs.empty() ? "" : ",", in);
    const PortKindInfo& kind = port_kind_info(pp.kind);
    std::string rule = kind.rule;
    std::string note;
    if (pp.kind == PortKind::call_output) {
      const PlanCall& call = plan.calls[pp.op];
      note = fmt::format(" by {}", call.name);
      if (call.outputs.size() > 1) note += fmt::format("[{}]", pp.slot);
      if (!call.static_args.empty()) {
        std::string args;
        for (const auto& a : call.static_args) args += (args.empty() ? "" : ", ") + a;
        note += fmt::format(" static({})", args);
      }
    } else if (pp.kind == PortKind::broadcast) {
      rule += fmt::format("(p{})", plan.broadcasts[pp.op].source);  // the effective source
    }
    out += fmt::format("  p{} {} d{} <- [{}] => {}{}{}\n", p, kind.name, pp.domain, inputs, rule,
                       note, pp.is_output ? " output" : "");
    for (const std::string& r : plan.rewrites[p]) out += "    " + r + "\n";
  }
  // A Call that no output depends on still runs (an input batch completes only when every
  // Grain is sealed, DESIGN 5) and its failures can still abort the run. It is not an error
  // (docs/SEMANTICS.md), but usually a forgotten return value, so the plan says so.
  std::vector<char> live(plan.ports.size(), 0);
  for (int o : plan.outputs) live[o] = 1;
  // Ports are created after their inputs, so one pass from the last Port down suffices.
  for (std::size_t id = plan.ports.size(); id-- > 0;) {
    if (!live[id]) continue;
    for (int in : plan.ports[id].inputs) live[in] = 1;
  }
  for (const PlanCall& c : plan.calls) {
    bool used = false;
    std::string outs;
    for (int o : c.outputs) {
      used = used || live[o];
      outs += fmt::format("{}p{}", outs.empty() ? "" : ",", o);
    }
    if (!used) {
      out += fmt::format(
          "  unused Call {} [{}]: no pipeline output depends on it, yet it runs on every Item "
          "and its failures count; return its output from forward() or remove it\n",
          c.name, outs);
    }
  }
  return out;
}

}  // namespace rayorch::detail
