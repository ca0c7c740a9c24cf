// The compiler of a traced graph (DESIGN 4): one phase per file, each a free function that
// reads its inputs as const and returns what it produces.
//
//   trace           graph.cc                 the Graph API records the logical program
//   verify          compile_verify.cc        checks the program, assigns Domains
//                   compile_verify_colocation.cc  co-located Modules agree on their pool
//   colocate        compile_colocate.cc      which Modules share a pool (declared or found)
//   canonicalise    compile_canonicalise.cc  collapses broadcast chains
//   analyse         compile_analyse.cc       mask producers, reduce guards
//   lower           compile_lower.cc         builds the RuntimePlan and its PlanCode
//   verify plan     compile_verify_plan.cc   internal consistency of the plan
//   explain         explain.cc               the explain() text of a plan
//
// compile_graph (compiler.cc) runs verify to verify plan in this order. DESIGN 4 lists analyse
// before canonicalise; here it runs after, because the analysis follows each broadcast to the Port
// the plan reads it from, which canonicalise decides: analysing the uncollapsed chain would
// mark the chain's inner broadcasts as mask carriers though no effect of the plan reads
// them. Consumers (DESIGN's other analysis) are effect indexes, built by lower with the
// effects; Domain depth is assigned by verify.
//
// Internal to src/program.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rayorch/program.h"

#include "program/logical.h"
#include "program/plan.h"

namespace rayorch::detail {

/// "Udf#index", the name of a Call in messages and in the plan.
std::string call_name(const Graph::Impl& g, int call);

/// What verify produces: the Domain tree and where each Port lives in it.
struct DomainAssignment {
  /// d0 is the root; then one child Domain per expand, in expand order. Only parent, depth
  /// and expand are set; the lists of what lives in each Domain are filled by lower.
  std::vector<PlanDomain> domains;
  std::vector<int> port_domain;    ///< per Port
  std::vector<int> expand_domain;  ///< per expand: the child Domain it creates

  /// True when `ancestor` is `domain` or one of its ancestors.
  bool is_ancestor_or_self(int ancestor, int domain) const {
    return detail::is_ancestor_or_self(domains, ancestor, domain);
  }
};

/// What canonicalise produces: the rewrites of the logical program.
struct Canonicalisation {
  bool optimized = true;  ///< the rewrites ran (CompileOptions::optimize)
  /// Per broadcast: the Port it reads, the first non-broadcast ancestor of its declared
  /// source when optimized, else the declared source.
  std::vector<int> broadcast_source;
  /// Per Port: the rewrite notes explain() prints under it.
  std::vector<std::vector<std::string>> rewrites;
};

/// What analyse produces: facts the runtime needs that no single operation shows.
struct Analysis {
  /// Per Port: some filter reads its value as a mask, directly or through filters and
  /// broadcasts, so its producer reports each row's boolean (DESIGN 6.2).
  std::vector<bool> needs_truth;
  /// Per reduce: the Calls of its child Domain upstream of its values or membership, in
  /// ascending order; a GroupFailure of one decides the reduce (DESIGN 5).
  std::vector<std::vector<int>> reduce_guards;
};

/// Checks every rule of the logical program and assigns each Port its Domain; throws
/// CompileError naming the Ports involved and the fix on the first broken rule.
DomainAssignment verify(const Graph& graph);

/// Part of verify: the Modules of each colocate group agree on their pool's options.
void verify_colocation(const Graph::Impl& g);

/// The options of a pool as (name, text) pairs in a fixed order: what the Modules sharing a
/// pool must agree on. batch_size, recovery and infra_retries are not among them: they are
/// each Call's own (DESIGN 5.12).
std::vector<std::pair<const char*, std::string>> pool_option_values(const ModuleOptions& o);

/// What colocate produces: which Modules share one pool (DESIGN 5.12).
struct Colocation {
  /// Per Module: the first Module (in Module order) of the pool its Calls run in; itself when
  /// it has a pool of its own or leads a shared one.
  std::vector<int> lead;
  /// Per Module: the pool it shares was found by the compiler (CompileOptions::auto_colocate)
  /// rather than declared with `colocate`.
  std::vector<bool> found;
};

/// The declared colocate groups and, with `options.auto_colocate`, the chains of Modules the
/// compiler may co-locate: every output of a Module's Calls is read only by Calls of one other
/// Module, neither declares a group, and the two agree on every pool option
/// (pool_option_values) and on the options the host passes to their actors.
Colocation colocate(const Graph::Impl& g, const CompileOptions& options);

/// Collapses chains of broadcasts unless `options.optimize` is false.
Canonicalisation canonicalise(const Graph::Impl& g, const CompileOptions& options);

/// Control demand (which producers report a mask's boolean) and reduce guards.
Analysis analyse(const Graph::Impl& g, const DomainAssignment& domains,
                 const Canonicalisation& canonical);

/// The RuntimePlan of pre-indexed effects, one pool per Module or co-located group, and its
/// typed code.
RuntimePlan lower(const Graph::Impl& g, const DomainAssignment& domains,
                  const Canonicalisation& canonical, const Analysis& analysis,
                  const Colocation& colocation);

/// Internal consistency of a lowered plan; throws CompileError ("internal error while
/// lowering the pipeline: ...") since a failure is a compiler bug.
void verify_plan(const RuntimePlan& plan);

}  // namespace rayorch::detail
