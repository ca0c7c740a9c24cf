// Compiler phase: lower the verified program to an immutable RuntimePlan of pre-indexed
// effects plus one actor-pool spec per Module, and its typed code (DESIGN 4).
#include <map>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "program/compiler.h"
#include "program/plan_code.h"

namespace rayorch::detail {

void Compiler::lower(RuntimePlan& plan) {
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
    code.codecs.push_back(lc.record.codecs);
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
  plan.code = std::make_shared<const PlanCode>(std::move(code));
}

}  // namespace rayorch::detail
