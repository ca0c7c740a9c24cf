// The exceptions the public API throws.
#pragma once

#include <stdexcept>
#include <string>

namespace rayorch {

/// A pipeline could not be traced or compiled. The message names the offending Port, Call
/// or Module and says how to fix it.
class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A run stopped on an unrecoverable failure: abort policy, exhausted retries, a UDF contract
/// error, a deadlock, or misuse of a closed executor. The executor is closed afterwards.
class ExecutionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace rayorch
