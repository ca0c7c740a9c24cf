// The output contract of one UDF call, shared by the Python and the C++ UDF adapters: a
// result is one column (or a tuple or list of columns, one per declared output), each with
// one row per input row; rows may be RecordFailure / GroupFailure instances; an expanded
// output's rows are lists or tuples and an F.filter mask's rows are bools.
#pragma once

#include <cstddef>
#include <vector>

#include "py_values.h"

namespace rayorch::python {

/// What one Call's invoker needs. Built while tracing; `expanded` and `mask` are set by the
/// F.expand and F.filter calls that read the Call's outputs, before the program is compiled,
/// and only read afterwards (from any actor thread).
struct CallInfo {
  std::size_t positional = 0;      ///< leading Port inputs passed positionally
  std::vector<Ref> keyword_names;  ///< then Port inputs passed by keyword (str)
  Ref static_kwargs;               ///< dict or null
  std::size_t outputs = 1;
  std::vector<char> expanded;  ///< per output: F.expand reads it
  std::vector<char> mask;      ///< per output: F.filter reads it as a mask
};

/// Checks `result`, the value a UDF returned for `rows` input rows, against the Call's
/// contract and turns it into blocks. A broken contract gives an output that carries only
/// its `contract_error` (no blocks, values or failures). The caller holds the GIL.
rd::RpcOutput checked_output(const CallInfo& info, PyObject* result, std::size_t rows);

}  // namespace rayorch::python
