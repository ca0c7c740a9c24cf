// Engine messages in the Python API's words. The engine's messages name its C++ API
// (`F::reduce`, `.recovery(ro::RecoveryPolicy::retry_batch(n))`, `RunOptions.journal.path`);
// a Python pipeline raises them with the Python spelling of the same thing instead. The one
// table of spellings is in python_wording.cc.
#pragma once

#include <string>
#include <string_view>

namespace rayorch::python {

/// `message` with every C++ API spelling replaced by the Python API's.
std::string python_wording(std::string_view message);

/// Raises the engine's CompileError, ExecutionError and std::invalid_argument (as
/// ValueError) in Python with python_wording() of their messages. Call once, after the
/// module's CompileError and ExecutionError types are registered.
void register_python_wording();

}  // namespace rayorch::python
