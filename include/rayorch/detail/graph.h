// The trace recorder: Module calls and structural operators append to the Graph of the
// pipeline being traced. The compiler (src/program) turns it into a RuntimePlan.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rayorch/detail/erased.h"
#include "rayorch/detail/erased_codec.h"
#include "rayorch/module_options.h"

namespace rayorch {

namespace detail {

/// A snapshot of a Module taken when it is first called during a trace.
struct ModuleRecord {
  const void* identity = nullptr;  ///< the Module object's identity (pool sharing)
  std::string udf_name;
  ModuleOptions options;
  Factory factory;
  /// Owns `identity` while the trace lives, so a Module destroyed mid-trace (a temporary)
  /// cannot free its address for another Module that would then wrongly share its pool.
  std::shared_ptr<const void> owner;
  /// The options a host passes to the pool's actors that the engine does not read (the
  /// Python package's Ray actor options), as text: Modules co-located by the compiler have
  /// equal ones (CompileOptions::auto_colocate). Empty in C++.
  std::string host_options;
};

/// One Module call as recorded by the typed front end.
struct CallRecord {
  std::vector<int> inputs;
  std::vector<std::string> output_types;
  Invoker invoker;
  std::vector<std::string> static_args;  ///< printable form of each static argument
  CallCodecs codecs;                     ///< how its values cross a process boundary
};

/// The logical program being recorded. Its contents are private to src/program.
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Adds a source column of the given type; returns its Port id.
  int add_source(std::string type);
  /// Records a Call of `module`; returns the ids of its output Ports.
  std::vector<int> add_call(ModuleRecord module, CallRecord call);
  /// Records an (aligned) expand of `lists`; returns the child Ports.
  std::vector<int> add_expand(std::vector<int> lists, std::vector<ListOps> ops,
                              std::vector<std::string> element_types);
  /// Records an (aligned) reduce; `members` is -1 for the default (the first value Port).
  std::vector<int> add_reduce(std::vector<int> values, int members, std::vector<GroupMaker> makers,
                              std::vector<std::string> group_types);
  /// Records a filter of `source` by `mask`.
  int add_filter(int source, int mask);
  /// Records a broadcast of `source` into the Domain of `like`.
  int add_broadcast(int source, int like);
  /// Sets the pipeline's output Ports.
  void set_outputs(std::vector<int> outputs);
  /// Lets an output be a Port of a child Domain: each root then delivers its descendants'
  /// Items of it (the Python package, as the reference does; a C++ program gathers instead).
  void allow_outputs_below_root();
  /// Marks the trace as finished (no more recording).
  void seal();

  /// A short description of a Port for messages, e.g. "p3 (output 0 of OcrPage#2)".
  std::string describe(int port) const;

  struct Impl;
  Impl& impl() { return *impl_; }
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

/// The Graph being traced on this thread, or null.
Graph* current_graph();
/// The shared owner of the Graph being traced on this thread, or null.
std::shared_ptr<Graph> current_graph_shared();

/// Makes a Graph the current trace target of this thread for its lifetime.
class TraceScope {
 public:
  explicit TraceScope(std::shared_ptr<Graph> graph);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  std::shared_ptr<Graph> previous_;
};

/// Throws CompileError: a Port belongs to another pipeline or to no running trace.
[[noreturn]] void throw_foreign_port(const Graph* port_graph, int port, const char* what);

}  // namespace detail
}  // namespace rayorch
