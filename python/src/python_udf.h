// The Python-UDF adapter: builds a Module's UDF instance on an actor (a class called with its
// constructor arguments, or a callable used as it is) and runs it on one batch. Both take
// the GIL themselves; they run on the actor threads.
#pragma once

#include <memory>
#include <span>

#include "py_values.h"
#include "udf_output.h"

namespace rayorch::python {

/// What a Module's actors are built from: the UDF (a class or a callable) and its
/// constructor arguments, replayed on every actor.
struct ModuleSpec {
  Ref udf;
  Ref args;    ///< tuple
  Ref kwargs;  ///< dict or null
};

/// A new UDF instance of `spec`; a constructor that raises throws rd::ForeignError.
std::unique_ptr<rd::UdfInstance> build_python_udf(const ModuleSpec& spec);

/// Runs a UDF instance built by build_python_udf on one batch: one Python list per Port
/// input (positional, then by keyword), the Call's static keyword arguments, and the
/// result checked against the Call's contract (udf_output.h).
rd::RpcOutput invoke_python_udf(const CallInfo& info, rd::UdfInstance& instance,
                                std::span<const rd::ColumnInput> in);

}  // namespace rayorch::python
