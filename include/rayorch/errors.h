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
/// error, a deadlock, the error budget, or misuse of a closed executor. The executor stays
/// open with its actors unless they broke (a replacement actor could not be built).
class ExecutionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown by a RunObserver callback or the streaming callback to stop a run at the user's
/// request (the Python package throws it on Ctrl-C) while keeping the executor usable: the
/// driver dispatches nothing more, waits for the RPCs in flight (their results are
/// discarded) and rethrows it; the next run() starts afresh. Any other exception from a
/// callback closes the executor. Not a std::exception, so no handler of failures takes it.
class RunInterrupted {
 public:
  virtual ~RunInterrupted() = default;
};

}  // namespace rayorch
