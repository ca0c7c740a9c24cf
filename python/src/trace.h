// Tracing and compilation: Trace records one Python pipeline into the engine's graph builder
// (the recorder the typed C++ front end uses) and compiles it into a Program.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "py_values.h"
#include "python_udf.h"
#include "replica_context.h"
#include "udf_output.h"
#include <nanobind/nanobind.h>

#include "rayorch/module_options.h"
#include "rayorch/program.h"

namespace rayorch::python {

/// An immutable compiled program, shared by every Core (and Ray actor) that runs it.
struct Program {
  std::shared_ptr<const rd::RuntimePlan> plan;
  std::vector<int> mask_sources;  ///< source columns read as filter masks (must be bool)
  std::size_t sources = 0;
  std::size_t outputs = 0;
};

/// Where a Port's values come from, for the mask and expand checks of the Python front end.
struct PortOrigin {
  enum class Kind { source, call_output, expand, reduce, filter, broadcast } kind;
  int index = -1;  ///< source column, or the Port's producer for filter/broadcast
  std::shared_ptr<CallInfo> call;
  std::size_t output = 0;
};

/// Records one pipeline. Used from the tracing thread only, with the GIL held.
class Trace {
 public:
  Trace();

  void enter();
  void exit();

  int add_source();
  /// Records a Call of the Module `module_key` (one pool per key; its UDF, constructor
  /// arguments, name and options are taken from its first Call), of the C++ UDF `cpp` when
  /// not empty. Returns the Call's output Port ids.
  std::vector<int> add_call(nanobind::handle module_key, nanobind::handle udf,
                            nanobind::handle init_args, nanobind::handle init_kwargs,
                            const std::string& name, nanobind::dict options,
                            const std::vector<int>& inputs, std::size_t positional,
                            nanobind::list keyword_names, nanobind::handle static_kwargs,
                            const std::vector<std::string>& statics, std::size_t outputs,
                            const std::string& cpp);
  std::vector<int> add_expand(const std::vector<int>& lists);
  std::vector<int> add_reduce(const std::vector<int>& values, int members);
  int add_filter(int source, int mask);
  int add_broadcast(int source, int like);
  std::string describe(int port) const;
  Program compile(const std::vector<int>& outputs, bool optimize, bool auto_colocate);

  const rd::Graph* graph() const { return graph_.get(); }

 private:
  /// The Module of `module_key`, created on its first Call.
  const std::shared_ptr<ModuleSpec>& module(nanobind::handle module_key, nanobind::handle udf,
                                            nanobind::handle init_args,
                                            nanobind::handle init_kwargs, const std::string& name,
                                            nanobind::dict options, const std::string& cpp);
  void mark_mask(int mask);

  std::shared_ptr<rd::Graph> graph_;
  std::unique_ptr<rd::TraceScope> scope_;
  std::map<int, PortOrigin> origins_;
  std::map<PyObject*, std::shared_ptr<ModuleSpec>> modules_;
  std::map<const ModuleSpec*, std::string> names_;
  std::map<const ModuleSpec*, ModuleOptions> options_;
  std::map<const ModuleSpec*, std::string> host_options_;  ///< host_pool_options()
  std::map<const ModuleSpec*, rd::Factory> native_factories_;
  std::map<const ModuleSpec*, std::shared_ptr<ReplicaRegistry>> replicas_;  ///< Python UDFs
  std::vector<nanobind::object> keys_;  ///< keeps the module keys alive while the trace lives
  int sources_ = 0;
  std::vector<int> mask_sources_;
};

/// Binds Program, Trace and foreign_port.
void bind_trace(nanobind::module_& m);

}  // namespace rayorch::python
