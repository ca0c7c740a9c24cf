// The compiler of a traced graph (DESIGN 4), one phase per file:
//
//   trace           graph.cc                 the Graph API records the logical program
//   verify          compile_verify.cc        checks the program, assigns Domains
//   canonicalise    compile_canonicalise.cc  collapses broadcast chains
//   lower           compile_lower.cc         builds the RuntimePlan and its PlanCode
//   analyse         compile_analyse.cc       mask producers, reduce guards
//   verify plan     compile_verify_plan.cc   internal consistency of the plan
//   explain         explain.cc               the explain() text of a plan
//
// compiler.cc runs the phases in this order. Internal to src/program.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rayorch/program.h"

#include "program/logical.h"
#include "program/plan.h"

namespace rayorch::detail {

/// "Udf#index", the name of a Call in messages and in the plan.
std::string call_name(const Graph::Impl& g, int call);

class Compiler {
 public:
  Compiler(const Graph& graph, const CompileOptions& options)
      : graph_(graph), g_(graph.impl()), options_(options) {}

  /// Runs every phase; throws CompileError on the first broken rule.
  std::shared_ptr<const RuntimePlan> run();

 private:
  std::string port(int p) const { return graph_.describe(p); }

  // compile_verify.cc: fills domain_ and expand_domain_, and the plan's Domains.
  void verify_and_assign_domains(RuntimePlan& plan);
  // compile_canonicalise.cc: fills effective_source_ and the plan's rewrites.
  void canonicalise(RuntimePlan& plan);
  // compile_lower.cc
  void lower(RuntimePlan& plan);
  // compile_analyse.cc
  void analyse(RuntimePlan& plan);
  static void find_reduce_guards(RuntimePlan& plan);
  static void mark_truth_producers(RuntimePlan& plan);
  // compile_verify_plan.cc
  void verify_plan(const RuntimePlan& plan) const;

  const Graph& graph_;
  const Graph::Impl& g_;
  CompileOptions options_;
  std::vector<int> domain_;            // per Port
  std::vector<int> expand_domain_;     // per expand: the child Domain it creates
  std::vector<int> effective_source_;  // per broadcast, after canonicalisation
};

}  // namespace rayorch::detail
