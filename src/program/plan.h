// The immutable RuntimePlan: pre-indexed effects the runtime follows without
// re-interpreting the graph. Plain data only: the code that touches payloads (invokers,
// factories, list and group accessors) lives apart in PlanCode (plan_code.h), which only the
// worker side includes, so the runtime cannot dereference a value.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "rayorch/module_options.h"
#include "rayorch/recovery.h"

#include "program/port_kind.h"

namespace rayorch::detail {

/// How a Port's Item feeds an effect.
enum class ConsumerKind : std::uint8_t {
  call_input,        ///< op = Call, slot = input index
  expand_list,       ///< op = expand, slot = list index
  reduce_value,      ///< op = reduce, slot = value index
  reduce_member,     ///< op = reduce
  filter_source,     ///< op = filter
  filter_mask,       ///< op = filter
  broadcast_source,  ///< op = broadcast
};

struct Consumer {
  ConsumerKind kind;
  int op;
  int slot;
};

/// True when `ancestor` is `domain` or one of its ancestors in `domains` (Domains with a
/// `parent`, -1 at the root: the plan's, or the compiler's DomainAssignment).
template <class Domains>
bool is_ancestor_or_self(const Domains& domains, int ancestor, int domain) {
  for (int d = domain; d >= 0; d = domains[static_cast<std::size_t>(d)].parent) {
    if (d == ancestor) return true;
  }
  return false;
}

struct PlanDomain {
  int parent = -1;  ///< -1 for the root Domain
  int depth = 0;
  int expand = -1;                       ///< the expand that creates this Domain's Entities
  std::vector<int> ports;                ///< Ports living in this Domain
  std::vector<int> calls;                ///< Calls whose Grains are Entities of this Domain
  std::vector<int> broadcasts_into;      ///< broadcasts targeting this Domain
  std::vector<int> reduces_of_children;  ///< reduces whose members are this Domain's children
};

struct PlanPort {
  PortKind kind = PortKind::source;
  int domain = 0;
  std::string type;
  std::vector<int> inputs;  ///< logical inputs shown by explain()
  int op = -1;
  int slot = 0;
  std::vector<Consumer> consumers;
  bool is_output = false;
  /// Some filter reads this Port's value as a mask (directly or through filters and
  /// broadcasts): its producer reports the boolean of each row (DESIGN 6.2).
  bool needs_truth = false;
  /// The expand that splits this list Port into children, or -1.
  int expanded_by = -1;
};

struct PlanCall {
  std::string name;  ///< "Udf#index"
  std::string udf;
  int pool = -1;
  int domain = 0;
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::vector<std::string> static_args;
  /// Domain whose Entity keys the GroupFailure barrier: the parent Domain, or the Call's own
  /// Domain for root Calls.
  int barrier_domain = 0;
  int batch_size = 1;
  RecoveryPolicy recovery;
  int infra_retries = 1;
};

struct PlanPool {
  std::string name;  ///< the UDF name, plus "/k" when several pools share a UDF type
  std::string udf;
  ModuleOptions options;
  std::vector<int> calls;
  /// Modules whose Calls it runs: 1, or the members of a colocate group (DESIGN 5.12).
  std::size_t members = 1;
  /// The compiler found the members (CompileOptions::auto_colocate); they did not declare it.
  bool found_by_compiler = false;
};

struct PlanExpand {
  int call = -1;
  std::vector<int> lists;
  std::vector<int> children;
  int parent_domain = 0;
  int child_domain = 0;
};

struct PlanReduce {
  std::vector<int> values;
  int members = -1;              ///< the membership Port (always set after lowering)
  bool members_is_value = true;  ///< members is values[0]
  std::vector<int> outputs;
  /// Calls of the child Domain upstream of the values or the membership. A GroupFailure of
  /// one of them decides this reduce for that parent (DESIGN 5), so a PRESENT group waits
  /// until every Grain of these Calls under the parent is sealed.
  std::vector<int> guards;
  int child_domain = 0;
  int parent_domain = 0;
};

struct PlanFilter {
  int source = -1;
  int mask = -1;
  int output = -1;
};

struct PlanBroadcast {
  int source = -1;           ///< the effective (canonical) source
  int declared_source = -1;  ///< as written by the user
  int output = -1;
  int source_domain = 0;
  int target_domain = 0;
};

/// Which Calls feed which, a fact of the wiring (compile_consumers.cc).
struct CallConsumers {
  /// Per Call: the other Calls that read its outputs directly or through filters, broadcasts
  /// and expands (values flow through those unchanged; a reduce or a Call ends the path).
  std::vector<std::vector<int>> direct;
  /// Per Call: every Call upstream of it (the transitive closure of `direct`, reversed).
  std::vector<std::vector<int>> upstream;
};

struct PlanCode;

struct RuntimePlan {
  bool optimized = true;
  std::vector<PlanDomain> domains;
  std::vector<PlanPort> ports;
  std::vector<PlanCall> calls;
  std::vector<PlanPool> pools;
  std::vector<PlanExpand> expands;
  std::vector<PlanReduce> reduces;
  std::vector<PlanFilter> filters;
  std::vector<PlanBroadcast> broadcasts;
  std::vector<int> sources;
  std::vector<int> outputs;
  /// Rewrite notes per Port (printed under the Port's line).
  std::vector<std::vector<std::string>> rewrites;
  /// Which Calls feed which (the scheduler's backpressure and batch_wait read it).
  CallConsumers call_consumers;
  /// The typed code of the program; read only at the worker boundary (plan_code.h).
  std::shared_ptr<const PlanCode> code;

  /// True when `ancestor` is `domain` or one of its ancestors.
  bool is_ancestor_or_self(int ancestor, int domain) const {
    return detail::is_ancestor_or_self(domains, ancestor, domain);
  }
};

/// The Call-to-Call feeds of a lowered plan: reads its Calls, Ports, filters, broadcasts and
/// expands. The compiler stores the result in RuntimePlan::call_consumers.
CallConsumers compute_call_consumers(const RuntimePlan& plan);

}  // namespace rayorch::detail
