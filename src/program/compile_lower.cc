// Compiler phase: lower the verified, canonical program to an immutable RuntimePlan of
// pre-indexed effects plus one actor-pool spec per Module, and its typed code (DESIGN 4).
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "program/colocated_instance.h"
#include "program/compiler.h"
#include "program/plan_code.h"

namespace rayorch::detail {

namespace {

void lower_ports(const Graph::Impl& g, const DomainAssignment& domains, const Analysis& analysis,
                 RuntimePlan& plan) {
  plan.ports.resize(g.ports.size());
  for (std::size_t id = 0; id < g.ports.size(); ++id) {
    PlanPort& pp = plan.ports[id];
    const LogicalPort& lp = g.ports[id];
    pp.kind = lp.kind;
    pp.domain = domains.port_domain[id];
    pp.type = lp.type;
    pp.op = lp.op;
    pp.slot = lp.slot;
    pp.needs_truth = analysis.needs_truth[id];
    plan.domains[pp.domain].ports.push_back(static_cast<int>(id));
  }
}

// Where each Module's Calls run: its pool, and its member index there when co-located.
struct ModulePools {
  std::vector<int> pool;    // per Module
  std::vector<int> member;  // per Module: its index in a co-located pool, or -1
};

// One pool per Module identity, in order of first use, except that co-located Modules share
// the pool of the first of them (DESIGN 5.12; verify() checked that declared groups agree on
// its options, colocate() found only Modules that do). A co-located pool is named after its
// members, "A+B".
ModulePools lower_pools(const Graph::Impl& g, const Colocation& colocation, RuntimePlan& plan,
                        PlanCode& code) {
  std::map<std::string, int> udf_count;
  for (const LogicalModule& m : g.modules) ++udf_count[m.record.udf_name];
  std::map<std::string, int> udf_seen;
  std::vector<std::string> names;
  for (const LogicalModule& m : g.modules) {
    int k = udf_seen[m.record.udf_name]++;
    names.push_back(udf_count[m.record.udf_name] > 1 ? fmt::format("{}/{}", m.record.udf_name, k)
                                                     : m.record.udf_name);
  }
  ModulePools out;
  std::vector<std::vector<int>> groups(g.modules.size());  // per lead: its Modules, in order
  for (std::size_t m = 0; m < g.modules.size(); ++m)
    groups[static_cast<std::size_t>(colocation.lead[m])].push_back(static_cast<int>(m));
  out.pool.assign(g.modules.size(), -1);
  out.member.assign(g.modules.size(), -1);
  for (std::size_t m = 0; m < g.modules.size(); ++m) {
    if (out.pool[m] >= 0) continue;
    const ModuleRecord& record = g.modules[m].record;
    const int id = static_cast<int>(plan.pools.size());
    PlanPool pool;
    pool.udf = record.udf_name;
    pool.name = names[m];
    pool.options = record.options;
    if (sizes_itself(pool.options)) pool.options.max_replicas = resolved_max_replicas(pool.options);
    out.pool[m] = id;
    const std::vector<int>& group = groups[m];
    if (group.size() > 1) {
      std::vector<Factory> factories;
      std::string udfs;
      std::string joined;
      for (std::size_t k = 0; k < group.size(); ++k) {
        const int member = group[k];
        out.pool[member] = id;
        out.member[member] = static_cast<int>(k);
        factories.push_back(g.modules[member].record.factory);
        udfs += (k == 0 ? "" : "+") + g.modules[member].record.udf_name;
        joined += (k == 0 ? "" : "+") + names[member];
      }
      pool.udf = std::move(udfs);
      pool.name = std::move(joined);
      pool.members = group.size();
      pool.found_by_compiler = colocation.found[m];
      code.factories.push_back(colocated_factory(std::move(factories)));
    } else {
      code.factories.push_back(record.factory);
    }
    plan.pools.push_back(std::move(pool));
  }
  return out;
}

void lower_calls(const Graph::Impl& g, const DomainAssignment& domains, const ModulePools& pools,
                 RuntimePlan& plan, PlanCode& code) {
  for (std::size_t c = 0; c < g.calls.size(); ++c) {
    const LogicalCall& lc = g.calls[c];
    PlanCall pc;
    pc.name = call_name(g, static_cast<int>(c));
    pc.udf = g.modules[lc.module].record.udf_name;
    pc.pool = pools.pool[lc.module];
    pc.domain = domains.port_domain[lc.outputs.empty() ? lc.record.inputs[0] : lc.outputs[0]];
    pc.inputs = lc.record.inputs;
    pc.outputs = lc.outputs;
    const int member = pools.member[lc.module];
    code.invokers.push_back(
        member < 0 ? lc.record.invoker
                   : member_invoker(lc.record.invoker, static_cast<std::size_t>(member)));
    code.codecs.push_back(lc.record.codecs);
    pc.static_args = lc.record.static_args;
    const int parent = plan.domains[pc.domain].parent;
    pc.barrier_domain = parent >= 0 ? parent : pc.domain;
    const ModuleOptions& o = g.modules[lc.module].record.options;
    pc.batch_size = o.batch_size;
    pc.recovery = o.recovery;
    pc.infra_retries = o.infra_retries;
    for (std::size_t i = 0; i < pc.inputs.size(); ++i) {
      plan.ports[pc.inputs[i]].consumers.push_back(
          Consumer{ConsumerKind::call_input, static_cast<int>(c), static_cast<int>(i)});
    }
    for (int out : pc.outputs) plan.ports[out].inputs = pc.inputs;
    plan.domains[pc.domain].calls.push_back(static_cast<int>(c));
    plan.pools[pc.pool].calls.push_back(static_cast<int>(c));
    plan.calls.push_back(std::move(pc));
  }
}

void lower_expands(const Graph::Impl& g, const DomainAssignment& domains, RuntimePlan& plan,
                   PlanCode& code) {
  for (std::size_t e = 0; e < g.expands.size(); ++e) {
    const LogicalExpand& le = g.expands[e];
    PlanExpand pe;
    pe.call = g.ports[le.lists[0]].op;
    pe.lists = le.lists;
    pe.children = le.children;
    code.list_ops.push_back(le.ops);
    pe.parent_domain = domains.port_domain[le.lists[0]];
    pe.child_domain = domains.expand_domain[e];
    for (std::size_t i = 0; i < pe.lists.size(); ++i) {
      plan.ports[pe.lists[i]].consumers.push_back(
          Consumer{ConsumerKind::expand_list, static_cast<int>(e), static_cast<int>(i)});
      plan.ports[pe.children[i]].inputs = {pe.lists[i]};
      plan.ports[pe.lists[i]].expanded_by = static_cast<int>(e);
    }
    plan.expands.push_back(std::move(pe));
  }
}

void lower_reduces(const Graph::Impl& g, const DomainAssignment& domains, const Analysis& analysis,
                   RuntimePlan& plan, PlanCode& code) {
  for (std::size_t r = 0; r < g.reduces.size(); ++r) {
    const LogicalReduce& lr = g.reduces[r];
    PlanReduce pr;
    pr.values = lr.values;
    pr.members = lr.members >= 0 ? lr.members : lr.values[0];
    pr.members_is_value = pr.members == lr.values[0];
    pr.outputs = lr.outputs;
    pr.guards = analysis.reduce_guards[r];
    code.makers.push_back(lr.makers);
    pr.child_domain = domains.port_domain[lr.values[0]];
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
}

void lower_filters(const Graph::Impl& g, RuntimePlan& plan) {
  for (std::size_t f = 0; f < g.filters.size(); ++f) {
    const LogicalFilter& lf = g.filters[f];
    plan.filters.push_back(PlanFilter{lf.source, lf.mask, lf.output});
    plan.ports[lf.source].consumers.push_back(
        Consumer{ConsumerKind::filter_source, static_cast<int>(f), 0});
    plan.ports[lf.mask].consumers.push_back(
        Consumer{ConsumerKind::filter_mask, static_cast<int>(f), 1});
    plan.ports[lf.output].inputs = {lf.source, lf.mask};
  }
}

void lower_broadcasts(const Graph::Impl& g, const DomainAssignment& domains,
                      const Canonicalisation& canonical, RuntimePlan& plan) {
  for (std::size_t b = 0; b < g.broadcasts.size(); ++b) {
    const LogicalBroadcast& lb = g.broadcasts[b];
    PlanBroadcast pb;
    pb.source = canonical.broadcast_source[b];
    pb.declared_source = lb.source;
    pb.output = lb.output;
    pb.source_domain = domains.port_domain[pb.source];
    pb.target_domain = domains.port_domain[lb.output];
    plan.ports[pb.source].consumers.push_back(
        Consumer{ConsumerKind::broadcast_source, static_cast<int>(b), 0});
    plan.ports[lb.output].inputs = {lb.source};
    plan.domains[pb.target_domain].broadcasts_into.push_back(static_cast<int>(b));
    plan.broadcasts.push_back(pb);
  }
}

}  // namespace

// The order of the steps fixes the order of each Port's consumers: Calls, expands, reduces,
// filters, broadcasts.
RuntimePlan lower(const Graph::Impl& g, const DomainAssignment& domains,
                  const Canonicalisation& canonical, const Analysis& analysis,
                  const Colocation& colocation) {
  RuntimePlan plan;
  PlanCode code;
  plan.optimized = canonical.optimized;
  plan.domains = domains.domains;
  plan.rewrites = canonical.rewrites;
  lower_ports(g, domains, analysis, plan);
  const ModulePools pools = lower_pools(g, colocation, plan, code);
  lower_calls(g, domains, pools, plan, code);
  lower_expands(g, domains, plan, code);
  lower_reduces(g, domains, analysis, plan, code);
  lower_filters(g, plan);
  lower_broadcasts(g, domains, canonical, plan);
  plan.sources = g.sources;
  plan.outputs = g.outputs;
  for (int out : plan.outputs) plan.ports[out].is_output = true;
  plan.code = std::make_shared<const PlanCode>(std::move(code));
  return plan;
}

}  // namespace rayorch::detail
